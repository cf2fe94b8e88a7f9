// Inside config/: one value's text form, read, written and quoted alike for every key.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace gpurelay::config_detail {

// config/keys.md, embedded at build time (config/CMakeLists.txt).
extern const std::string_view kKeysMarkdown;

inline constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();

// Quoted, control characters escaped so that the message stays on one line.
std::string quote_for_message(std::string_view text);
// Throws the usage error "LABEL: expected WHAT, got 'TEXT'".
[[noreturn]] void throw_expected(std::string_view label, std::string_view what,
                                 std::string_view text);
// `text` read whole as a T (no sign but '-', no spaces, nothing after it), or none.
template <typename T>
std::optional<T> read_whole(std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}
std::int64_t parse_int(std::string_view label, std::string_view text, std::int64_t min);
// Finite.
double parse_real(std::string_view label, std::string_view text);
bool parse_bool(std::string_view label, std::string_view text);
// Shortest text that reads back to the same double, always with a '.' or an exponent so that
// TOML sees a float and an integer key would reject it.
std::string format_real(double value);
// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_quote(std::string_view text);

}  // namespace gpurelay::config_detail
