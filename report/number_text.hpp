// Inside report/: a number as text through a printf format, shared by the report and the CSV.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace gpurelay {

// `value` through `format` ("%.3f"), or "-" for NaN.
inline std::string fmt(const char* format, double value) {
    if (std::isnan(value)) return "-";
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

}  // namespace gpurelay
