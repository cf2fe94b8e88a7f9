// Inside report/: a figure as text through a {fmt} format spec, shared by the report and the CSV.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace gpurelay {

// `value` through the {fmt} spec `format` ("{:.3f}"), or "-" for NaN (a figure not measured).
inline std::string number_text(fmt::format_string<double> format, double value) {
    if (std::isnan(value)) return "-";
    return fmt::vformat(format, fmt::make_format_args(value));
}

}  // namespace gpurelay
