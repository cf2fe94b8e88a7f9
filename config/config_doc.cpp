// docs/CONFIG.md, made from the key table: the reference a reader looks keys up in, generated so
// that it cannot drift from what --help and the parser accept.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "config/value_text.hpp"

namespace gpurelay {
namespace {

// CONFIG.md's head: keys.md's fenced block.
std::string_view doc_head() {
    constexpr std::string_view kFence = "~~~markdown\n";
    const std::string_view md = config_detail::kKeysMarkdown;
    const std::size_t begin = md.find(kFence) + kFence.size();
    return md.substr(begin, md.find("\n~~~", begin) + 1 - begin);
}

// `text` in backticks. Built by appends: GCC 12 warns falsely (-Wrestrict) on "`" + a temporary.
std::string code(std::string_view text) {
    std::string out(1, '`');
    out += text;
    out += '`';
    return out;
}

// "a|b|c" as "`a`, `b`, `c`" (a table cell cannot hold a bare "|").
std::string choices_text(std::string_view hint) {
    std::string text;
    while (!hint.empty()) {
        const std::size_t bar = hint.find('|');
        if (!text.empty()) text += ", ";
        text += code(hint.substr(0, bar));
        hint = bar == std::string_view::npos ? std::string_view() : hint.substr(bar + 1);
    }
    return text;
}

// A size in bytes or values as its count and, where it is a whole number of them, in Ki/Mi/Gi.
std::string size_text(const std::string& count) {
    const unsigned long long value = std::stoull(count);
    static constexpr std::pair<unsigned long long, std::string_view> kUnits[] = {
        {1ull << 30, "Gi"}, {1ull << 20, "Mi"}, {1ull << 10, "Ki"}};
    for (const auto& [unit, suffix] : kUnits) {
        if (value >= unit && value % unit == 0) {
            return code(std::to_string(value / unit) + std::string(suffix));
        }
    }
    return code(count);
}

std::string default_text(const ConfigKey& key) {
    const std::string text = config_value_text(Config{}, key.name);
    if (text.empty()) return "none";
    return key.type.starts_with("size") ? size_text(text) : code(text);
}

}  // namespace

std::string config_doc_markdown() {
    const std::vector<ConfigKey>& keys = config_keys();
    std::string doc(doc_head());
    for (const ConfigKey& key : keys) {
        for (const std::string& cell :
             {code(key.name), std::string(key.type), default_text(key),
              key.range.empty() ? choices_text(key.value_hint) : std::string(key.range),
              std::string(key.help)}) {
            (doc += "| ") += cell;
            doc += ' ';
        }
        doc += "|\n";
    }
    std::string free_keys;
    for (const ConfigKey& key : keys) {
        if (key.may_differ_on_resume)
            (free_keys += free_keys.empty() ? "" : ", ") += code(key.name);
    }
    doc +=
        "\n`resume` continues a file only where every key matches the deck stored in it, "
        "except these, which cannot change a result: " +
        free_keys + ".\n";
    doc += "\n## Details\n";
    // Keys next to one another that share a paragraph get one section.
    for (std::size_t i = 0; i < keys.size();) {
        if (keys[i].details.empty()) {
            ++i;
            continue;
        }
        std::string heading = code(keys[i].name);
        std::size_t next = i + 1;
        for (; next < keys.size() && keys[next].details == keys[i].details; ++next) {
            (heading += ", ") += code(keys[next].name);
        }
        ((doc += "\n### ") += heading) += "\n\n";
        (doc += keys[i].details) += '\n';
        i = next;
    }
    return doc;
}

}  // namespace gpurelay
