// The text form of one value: integers, numbers, booleans and sizes read from text, numbers and
// strings written as TOML, and values quoted for error messages.
#include "config/value_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include "config/config.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace config_detail {
namespace {

struct Escape {
    char c;
    std::string_view as;
};

// `text` between `quote`s: each character of `escapes` as its escape, any other control character
// as `hex` and its code in two of `digits`.
std::string quoted(std::string_view text, char quote, std::span<const Escape> escapes,
                   std::string_view hex, const char* digits) {
    std::string out(1, quote);
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const auto escape =
            std::find_if(escapes.begin(), escapes.end(), [c](const Escape& e) { return e.c == c; });
        if (escape != escapes.end()) {
            out += escape->as;
        } else if (byte < 0x20 || byte == 0x7f) {
            ((out += hex) += digits[byte >> 4]) += digits[byte & 0xf];
        } else {
            out += c;
        }
    }
    return out + quote;
}

}  // namespace

std::string quote_for_message(std::string_view text) {
    static constexpr Escape kEscapes[] = {{'\n', "\\n"}, {'\t', "\\t"}};
    return quoted(text, '\'', kEscapes, "\\x", "0123456789abcdef");
}

[[noreturn]] void throw_expected(std::string_view label, std::string_view what,
                                 std::string_view text) {
    throw usage_error(std::string(label) + ": expected " + std::string(what) + ", got " +
                      quote_for_message(text));
}

std::int64_t parse_int(std::string_view label, std::string_view text, std::int64_t min) {
    const std::string_view what = min > 0 ? "a positive integer" : "a non-negative integer";
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range) {
        throw usage_error(std::string(label) + ": " + quote_for_message(text) + " is too large");
    }
    if (ec != std::errc() || end != text.data() + text.size() || value < min) {
        throw_expected(label, what, text);
    }
    return value;
}

double parse_real(std::string_view label, std::string_view text) {
    // Out of range ("1e999") is as wrong as "inf": a run cannot use either.
    const std::optional<double> value = read_whole<double>(text);
    if (!value || !std::isfinite(*value)) throw_expected(label, "a finite number", text);
    return *value;
}

bool parse_bool(std::string_view label, std::string_view text) {
    if (text == "true") return true;
    if (text == "false") return false;
    throw_expected(label, "true or false", text);
}

std::string format_real(double value) {
    std::array<char, 64> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    std::string text(buffer.data(), ec == std::errc() ? end : buffer.data());
    if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

std::string toml_quote(std::string_view text) {
    static constexpr Escape kEscapes[] = {{'"', "\\\""}, {'\\', "\\\\"}, {'\b', "\\b"},
                                          {'\t', "\\t"}, {'\n', "\\n"},  {'\f', "\\f"},
                                          {'\r', "\\r"}};
    return quoted(text, '"', kEscapes, "\\u00", "0123456789ABCDEF");
}

}  // namespace config_detail

using config_detail::quote_for_message;

namespace {

constexpr std::uint64_t kMaxSize = std::numeric_limits<std::uint64_t>::max();

[[noreturn]] void throw_bad_size(std::string_view key, std::string_view text) {
    throw usage_error(std::string(key) +
                      ": expected a size (an integer with an optional suffix k, K, Ki, M, Mi, G, "
                      "Gi, T or Ti, or a whole number in exponent form such as 1e9), got " +
                      quote_for_message(text));
}

[[noreturn]] void throw_huge_size(std::string_view key, std::string_view text) {
    throw usage_error(std::string(key) + ": " + quote_for_message(text) +
                      " is too large (at most 18446744073709551615)");
}

bool all_digits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "1e9", "2.5e3", "15E+2": a size in exponent form (no suffix), taken only when it is exactly a
// whole number, worked out in decimal digits so no rounding can make "1.0000000000000001e0" one.
std::uint64_t parse_exponent_size(std::string_view key, std::string_view text) {
    const std::size_t e = text.find_first_of("eE");
    const std::string_view mantissa = text.substr(0, e);
    std::string_view exponent_text = text.substr(e + 1);
    if (!exponent_text.empty() && exponent_text.front() == '+') exponent_text.remove_prefix(1);
    const bool negative = !exponent_text.empty() && exponent_text.front() == '-';
    if (negative) exponent_text.remove_prefix(1);
    const std::size_t dot = mantissa.find('.');
    const std::string_view whole = mantissa.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
    if (!all_digits(whole) || (dot != std::string_view::npos && !all_digits(fraction)) ||
        !all_digits(exponent_text) || exponent_text.size() > 4) {
        throw_bad_size(key, text);
    }
    std::string digits = std::string(whole) + std::string(fraction);
    std::int64_t exponent = std::stoll(std::string(exponent_text));
    exponent = (negative ? -exponent : exponent) - static_cast<std::int64_t>(fraction.size());
    // Digits moved behind the point must all be zeros, else the value is not whole.
    for (; exponent < 0; ++exponent) {
        if (digits.empty() || digits.back() != '0') {
            throw usage_error(std::string(key) + ": " + quote_for_message(text) +
                              " is not a whole number");
        }
        digits.pop_back();
    }
    std::uint64_t value = 0;
    for (const char digit : digits) {
        const auto d = static_cast<std::uint64_t>(digit - '0');
        if (value > (kMaxSize - d) / 10) throw_huge_size(key, text);
        value = value * 10 + d;
    }
    for (; exponent > 0 && value != 0; --exponent) {
        if (value > kMaxSize / 10) throw_huge_size(key, text);
        value *= 10;
    }
    return value;
}

}  // namespace

std::uint64_t parse_size(std::string_view key, std::string_view text) {
    if (text.find_first_of("eE") != std::string_view::npos) {
        return parse_exponent_size(key, text);
    }
    std::uint64_t count = 0;
    const char* const last = text.data() + text.size();
    // from_chars takes no sign, so "-4" and "+4" fail here as they should.
    const auto [digits_end, ec] = std::from_chars(text.data(), last, count);
    if (ec == std::errc::invalid_argument) throw_bad_size(key, text);
    const std::string_view suffix(digits_end, static_cast<std::size_t>(last - digits_end));
    static constexpr std::pair<std::string_view, std::uint64_t> kMultipliers[] = {
        {"", 1},
        {"k", 1000},
        {"K", 1000},
        {"Ki", 1ull << 10},
        {"M", 1000'000},
        {"Mi", 1ull << 20},
        {"G", 1000'000'000},
        {"Gi", 1ull << 30},
        {"T", 1000'000'000'000},
        {"Ti", 1ull << 40},
    };
    const auto* multiplier = std::find_if(std::begin(kMultipliers), std::end(kMultipliers),
                                          [&](const auto& m) { return m.first == suffix; });
    if (multiplier == std::end(kMultipliers)) throw_bad_size(key, text);
    if (ec == std::errc::result_out_of_range || count > kMaxSize / multiplier->second) {
        throw_huge_size(key, text);
    }
    return count * multiplier->second;
}

namespace {

std::string_view trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(' ');
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// "FIRST:LAST:xF" or "FIRST:LAST:+STEP": every size from FIRST while it is at most LAST.
std::vector<std::uint64_t> parse_size_range(std::string_view key, std::string_view text) {
    const std::size_t a = text.find(':'), b = text.find(':', a + 1);
    const std::string_view step = b == std::string_view::npos ? "" : trimmed(text.substr(b + 1));
    if (b == std::string_view::npos || step.size() < 2 || (step[0] != 'x' && step[0] != '+')) {
        throw usage_error(std::string(key) + ": expected a range FIRST:LAST:xFACTOR or " +
                          "FIRST:LAST:+STEP (e.g. 4Ki:256Mi:x4), got " + quote_for_message(text));
    }
    const std::uint64_t first = parse_size(key, trimmed(text.substr(0, a)));
    const std::uint64_t last = parse_size(key, trimmed(text.substr(a + 1, b - a - 1)));
    const bool geometric = step[0] == 'x';
    const std::uint64_t by = parse_size(key, step.substr(1));
    if (last < first || (geometric ? by < 2 || first == 0 : by == 0)) {
        throw usage_error(std::string(key) + ": the range " + quote_for_message(text) +
                          " does not grow (FIRST at most LAST, a factor of at least x2 or a step "
                          "of at least +1)");
    }
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t size = first;;) {
        sizes.push_back(size);
        if (sizes.size() > kMaxSizes) break;  // reported by the caller
        if (geometric ? size > last / by : size > last - by) break;
        size = geometric ? size * by : size + by;
    }
    return sizes;
}

}  // namespace

std::vector<std::uint64_t> parse_size_list(std::string_view key, std::string_view text) {
    std::vector<std::uint64_t> sizes;
    if (text.find(':') != std::string_view::npos) {
        sizes = parse_size_range(key, text);
    } else {
        for (std::size_t start = 0;;) {
            const std::size_t comma = text.find(',', start);
            const std::string_view item = trimmed(text.substr(start, comma - start));
            if (item.empty()) {
                throw usage_error(std::string(key) + ": " +
                                  (trimmed(text).empty()
                                       ? std::string("the list of sizes is empty")
                                       : "an empty size in the list " + quote_for_message(text)));
            }
            sizes.push_back(parse_size(key, item));
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
    }
    if (sizes.size() > kMaxSizes) {
        throw usage_error(std::string(key) + ": " + quote_for_message(text) + " gives more than " +
                          std::to_string(kMaxSizes) + " sizes (at most " +
                          std::to_string(kMaxSizes) + " in one run)");
    }
    for (auto size = sizes.begin(); size != sizes.end(); ++size) {
        if (std::find(sizes.begin(), size, *size) != size) {
            throw usage_error(std::string(key) + ": the size " + std::to_string(*size) +
                              " is given twice in " + quote_for_message(text));
        }
    }
    return sizes;
}

}  // namespace gpurelay
