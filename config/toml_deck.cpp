// Input decks in TOML: reading one on top of a Config, and writing the resolved Config as one.
#include <toml++/toml.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "config/value_text.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using config_detail::format_real;
using config_detail::quote_for_message;

// A deck value as the text a flag would give; containers and dates are errors.
std::string node_text(const toml::node& node, std::string_view origin, std::string_view key) {
    if (node.is_string()) return std::string(*node.value<std::string_view>());
    if (node.is_integer()) return std::to_string(*node.value<std::int64_t>());
    if (node.is_floating_point()) return format_real(*node.value<double>());
    if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
    const std::string_view what = node.is_table()       ? "a table"
                                  : node.is_array()     ? "an array"
                                  : node.is_date()      ? "a date"
                                  : node.is_time()      ? "a time"
                                  : node.is_date_time() ? "a date-time"
                                                        : "an empty node";
    throw usage_error(std::string(origin) + ": " + quote_for_message(key) +
                      " must be a plain value, not " + std::string(what));
}

}  // namespace

std::string config_to_toml(const Config& config) {
    std::string out =
        "# gpurelay input deck: the resolved configuration (read back with --input)\n";
    for (const ConfigKey& key : config_keys()) {
        out += std::string(key.name) + " = " + config_value_toml(config, key.name) + "\n";
    }
    return out;
}

Config config_from_toml(std::string_view toml_text, std::string_view origin, Config base) {
    toml::table deck;
    try {
        deck = toml::parse(toml_text, origin);
    } catch (const toml::parse_error& e) {
        std::string description(e.description());
        // toml++ messages may span lines; errors here are one line.
        std::replace(description.begin(), description.end(), '\n', ' ');
        throw usage_error(std::string(origin) + ":" + std::to_string(e.source().begin.line) + ":" +
                          std::to_string(e.source().begin.column) + ": " + description);
    }

    // The table iterates in key order; report the first problem in the order of the file.
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (const auto& [key, node] : deck) entries.emplace_back(&key, &node);
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        const toml::source_position& pa = a.first->source().begin;
        const toml::source_position& pb = b.first->source().begin;
        return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });

    for (const auto& [key, node] : entries) {
        const std::string_view name = key->str();
        const std::string text = node_text(*node, origin, name);
        try {
            set_config_value(base, name, text);
        } catch (const Error& e) {
            throw usage_error(std::string(origin) + ": " + e.what());
        }
    }
    return base;
}

}  // namespace gpurelay
