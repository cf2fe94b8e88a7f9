// Inside report/: a figure as text through a {fmt} format spec, shared by the report and the CSV.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace gpurelay {

// `value` through the {fmt} spec `format` ("{:.3f}"), or "-" for NaN (a figure not measured).
inline std::string number_text(fmt::format_string<double> format, double value) {
    if (std::isnan(value)) return "-";
    return fmt::vformat(format, fmt::make_format_args(value));
}

// A figure and its interval, all with the value's 4 significant digits (none past the units for
// 1000 and over): "5.518 [5.330, 5.850]"; the value alone where either end is NaN; "-" for NaN.
inline std::string interval_text(double value, double lo, double hi) {
    const int decimals =
        !(std::fabs(value) > 0) || !std::isfinite(value)
            ? 0
            : std::clamp(3 - static_cast<int>(std::floor(std::log10(std::fabs(value)))), 0, 9);
    auto fixed = [&](double v) {
        return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, decimals);
    };
    std::string text = fixed(value);
    if (!std::isnan(lo) && !std::isnan(hi)) text += " [" + fixed(lo) + ", " + fixed(hi) + "]";
    return text;
}

// "3" or "2 to 4": the range of a count.
inline std::string range_text(std::size_t least, std::size_t most) {
    return least == most ? std::to_string(most) : fmt::format("{} to {}", least, most);
}

// A duration in microseconds in the unit that reads: "82.5 µs", "1.95 ms", "1.95 s".
inline std::string duration_text_us(double us) {
    if (std::isnan(us)) return "-";
    if (us < 1000.0) return number_text("{:.1f}", us) + " µs";
    if (us < 1e6) return number_text("{:.2f}", us / 1e3) + " ms";
    return number_text("{:.2f}", us / 1e6) + " s";
}

}  // namespace gpurelay
