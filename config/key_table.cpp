// The key table: one line per key, made by one factory per kind of value; its prose (--help,
// docs/CONFIG.md) is config/keys.md's, read in by key. Every key has one setter that reads text,
// from a flag or a deck, so both accept exactly the same values and report the same errors.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config/config.hpp"
#include "config/transport_choice.hpp"
#include "config/value_text.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using namespace config_detail;

// How a key's text is written into TOML: quoted, or as a bare literal.
enum class TomlForm { bare, quoted, size };

struct KeySpec {
    ConfigKey key;  // its words (help, range, details) from keys.md where the factory left them
    TomlForm toml_form;
    // Reads `text` into the field; errors start with `label` (the key, or the flag).
    std::function<void(Config&, std::string_view text, std::string_view label)> set;
    // The field as text the setter reads back to the same value.
    std::function<std::string(const Config&)> get;
};

// --- The keys' words: config/keys.md -------------------------------------------------------------

struct KeyWords {
    std::string help, range, details;
};

// keys.md, read once: under "## Keys" a section's first paragraph is its key's help line and a
// paragraph "Range: ..." its range; under "## Details" a section's paragraphs are the details of
// each key its heading names (`a`, `b`). A paragraph's lines are joined with spaces.
const std::map<std::string, KeyWords, std::less<>>& key_words() {
    static const auto words = [] {
        std::map<std::string, KeyWords, std::less<>> out;
        bool details = false;
        std::vector<std::string> keys;  // the section's
        std::string paragraph;
        const auto end_paragraph = [&] {
            for (const std::string& key : keys) {
                if (paragraph.empty()) break;
                KeyWords& w = out[key];
                if (details) {
                    (w.details += w.details.empty() ? "" : "\n\n") += paragraph;
                } else if (paragraph.starts_with("Range: ")) {
                    w.range = paragraph.substr(7);
                } else {
                    w.help = paragraph;
                }
            }
            paragraph.clear();
        };
        for (std::string_view text = kKeysMarkdown; !text.empty();) {
            const std::string_view line = text.substr(0, text.find('\n'));
            text.remove_prefix(std::min(text.size(), line.size() + 1));
            if (line.empty() || line.starts_with('#')) end_paragraph();
            if (line.starts_with("## ")) {
                details = line == "## Details";
                keys.clear();
            } else if (line.starts_with("### ")) {
                keys.clear();
                for (std::size_t at = line.find('`'); at != std::string_view::npos;) {
                    const std::size_t end = line.find('`', at + 1);
                    keys.emplace_back(line.substr(at + 1, end - at - 1));
                    at = line.find('`', end + 1);
                }
            } else if (!line.empty()) {
                (paragraph += paragraph.empty() ? "" : " ") += line;
            }
        }
        end_paragraph();
        return out;
    }();
    return words;
}

// `spec` with the words keys.md has for it, where its factory left them empty.
KeySpec worded(KeySpec spec) {
    const auto found = key_words().find(spec.key.name);
    if (found == key_words().end() || (spec.key.help.empty() && found->second.help.empty())) {
        throw runtime_error("config/keys.md has no help line for the key '" +
                            std::string(spec.key.name) + "'");
    }
    const KeyWords& words = found->second;
    if (spec.key.help.empty()) spec.key.help = words.help;
    if (spec.key.range.empty()) spec.key.range = words.range;
    if (spec.key.details.empty()) spec.key.details = words.details;
    return spec;
}

// --- Key factories: one per kind of value, so the table below stays one line per key ----------

KeySpec int_key(std::string_view name, std::int64_t Config::*field, std::int64_t min) {
    return {{.name = name, .value_hint = min > 0 ? "INT>=1" : "INT>=0", .type = "integer"},
            TomlForm::bare,
            [field, min](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_int(label, text, min);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

KeySpec size_key(std::string_view name, std::uint64_t Config::*field) {
    return {{.name = name, .value_hint = "SIZE", .type = "size"},
            TomlForm::size,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_size(label, text);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

// `elements`: one size, or the sizes of a run of several (parse_size_list), written back as plain
// numbers ("4096,65536", a TOML string; one size stays a TOML integer).
KeySpec sizes_key() {
    return {{.name = "elements",
             .value_hint = "SIZE|LIST|RANGE",
             .type = "size, or a list or range of sizes"},
            TomlForm::size,
            [](Config& c, std::string_view text, std::string_view label) {
                std::vector<std::uint64_t> sizes = parse_size_list(label, text);
                c.elements = sizes.front();
                if (sizes.size() == 1) sizes.clear();
                c.sizes = std::move(sizes);
            },
            [](const Config& c) { return comma_list(c.size_list()); }};
}

KeySpec real_key(std::string_view name, double Config::*field, bool positive) {
    return {{.name = name, .value_hint = positive ? "NUMBER>0" : "NUMBER", .type = "number"},
            TomlForm::bare,
            [field, positive](Config& c, std::string_view text, std::string_view label) {
                const double value = parse_real(label, text);
                if (positive && !(value > 0)) throw_expected(label, "a positive number", text);
                c.*field = value;
            },
            [field](const Config& c) { return format_real(c.*field); }};
}

KeySpec bool_key(std::string_view name, bool Config::*field) {
    return {{.name = name, .value_hint = "true|false", .is_bool = true, .type = "boolean"},
            TomlForm::bare,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_bool(label, text);
            },
            [field](const Config& c) { return std::string(c.*field ? "true" : "false"); }};
}

KeySpec text_key(std::string_view name, std::string_view hint, std::string Config::*field) {
    return {{.name = name, .value_hint = hint, .type = "text"},
            TomlForm::quoted,
            [field](Config& c, std::string_view text, std::string_view) { c.*field = text; },
            [field](const Config& c) { return c.*field; }};
}

// The choice of `choices` named `text`, or none.
template <class Enum, std::size_t N>
std::optional<Enum> named(std::array<Enum, N> choices, std::string_view text) {
    for (const Enum choice : choices) {
        if (to_string(choice) == text) return choice;
    }
    return std::nullopt;
}

// `hint` lists the choices as "a|b|c"; the error message repeats it. (`Enum` comes from the
// choices, so that a field of PipelineKeys converts to a field of Config.)
template <class Enum, std::size_t N>
KeySpec choice_key(std::string_view name, std::string_view hint,
                   std::type_identity_t<Enum Config::*> field, std::array<Enum, N> choices) {
    return {{.name = name, .value_hint = hint, .type = "choice"},
            TomlForm::quoted,
            [field, choices, hint](Config& c, std::string_view text, std::string_view label) {
                const std::optional<Enum> choice = named(choices, text);
                if (!choice) throw_expected(label, "one of " + std::string(hint), text);
                c.*field = *choice;
            },
            [field](const Config& c) { return std::string(to_string(c.*field)); }};
}

// `transport`: auto, or a name of the transports' table, which lists the choices; CONFIG.md gives
// the table after keys.md's paragraph.
KeySpec transport_key() {
    static const std::string hint = [] {
        std::string text;
        for (const std::string_view name : transport_names())
            (text += text.empty() ? "" : "|") += name;
        return text;
    }();
    static const std::string details = [] {
        std::string text =
            key_words().at("transport").details + "\n\n" + transport_table_markdown();
        text.pop_back();  // a key's paragraph ends without its line break
        return text;
    }();
    return {{.name = "transport", .value_hint = hint, .type = "choice", .details = details},
            TomlForm::quoted,
            [](Config& c, std::string_view text, std::string_view label) {
                const std::vector<std::string_view> names = transport_names();
                if (std::find(names.begin(), names.end(), text) == names.end()) {
                    throw_expected(label, "one of " + hint, text);
                }
                c.transport = text;
            },
            [](const Config& c) { return c.transport; }};
}

KeySpec seed_key() {
    return {{.name = "seed", .value_hint = "UINT32", .type = "integer"},
            TomlForm::bare,
            [](Config& c, std::string_view text, std::string_view label) {
                const std::optional<std::uint64_t> value = read_whole<std::uint64_t>(text);
                if (!value || *value > kMax32) {
                    throw_expected(label, "an integer from 0 to 4294967295", text);
                }
                c.seed = static_cast<std::uint32_t>(*value);
            },
            [](const Config& c) { return std::to_string(c.seed); }};
}

// K of "NAME:K" (an integer >= 1), or 0 when `text` is not of that form.
std::int64_t count_after(std::string_view text, std::string_view name) {
    if (!text.starts_with(name) || text.size() <= name.size() || text[name.size()] != ':') {
        return 0;
    }
    const std::optional<std::int64_t> k = read_whole<std::int64_t>(text.substr(name.size() + 1));
    return k && *k >= 1 ? *k : 0;
}

// A choice of which some are written NAME:K (K >= 1, in `count`; zero for the `plain` ones, so
// that two equal settings compare equal).
template <class Enum, std::size_t P, std::size_t C>
KeySpec counted_choice_key(std::string_view name, std::string_view hint, std::string_view what,
                           std::type_identity_t<Enum Config::*> field, std::int64_t Config::*count,
                           std::array<Enum, P> plain, std::array<Enum, C> counted) {
    return {{.name = name, .value_hint = hint, .type = "choice"},
            TomlForm::quoted,
            [=](Config& c, std::string_view text, std::string_view label) {
                c.*count = 0;
                if (const std::optional<Enum> choice = named(plain, text)) {
                    c.*field = *choice;
                    return;
                }
                for (const Enum choice : counted) {
                    if (const std::int64_t k = count_after(text, to_string(choice)); k > 0) {
                        c.*field = choice;
                        c.*count = k;
                        return;
                    }
                }
                throw_expected(label, what, text);
            },
            [=](const Config& c) {
                std::string text(to_string(c.*field));
                // Appended in two steps: GCC 12 warns falsely (-Wrestrict) on ":" + a temporary.
                if (std::find(counted.begin(), counted.end(), c.*field) != counted.end()) {
                    (text += ':') += std::to_string(c.*count);
                }
                return text;
            }};
}

// `duration`: a number of seconds with a unit (s, m, h, d; none: seconds), up to a year; empty
// for none. Written back in the largest unit it is a whole number of.
KeySpec duration_key() {
    constexpr std::string_view kWhat =
        "a duration such as 20s, 10m, 1.5h or 1d, from 1 ms to a year, or empty for none";
    static constexpr std::pair<char, double> kUnits[] = {
        {'d', 86400.0}, {'h', 3600.0}, {'m', 60.0}, {'s', 1.0}};
    return {{.name = "duration", .value_hint = "DURATION", .type = "duration"},
            TomlForm::quoted,
            [kWhat](Config& c, std::string_view text, std::string_view label) {
                if (text.empty()) {
                    c.duration_s = 0;
                    return;
                }
                const std::string_view given = text;
                double unit = 1.0;
                for (const auto& [suffix, seconds] : kUnits) {
                    if (text.size() > 1 && text.back() == suffix) {
                        unit = seconds;
                        text.remove_suffix(1);
                        break;
                    }
                }
                const double value = read_whole<double>(text).value_or(-1) * unit;
                if (!(value >= 0.001) || value > 365.0 * 86400) throw_expected(label, kWhat, given);
                c.duration_s = value;
            },
            [](const Config& c) {
                if (c.duration_s == 0) return std::string();
                for (const auto& [suffix, seconds] : kUnits) {
                    const double count = c.duration_s / seconds;
                    if (count >= 1 && count == std::floor(count)) {
                        return std::to_string(static_cast<std::int64_t>(count)) + suffix;
                    }
                }
                return format_real(c.duration_s) + "s";
            }};
}

KeySpec profile_steps_key() {
    constexpr std::string_view kWhat = "A:B with 0 <= A <= B, or empty for no capture range";
    return {{.name = "profile_steps", .value_hint = "A:B", .type = "text"},
            TomlForm::quoted,
            [kWhat](Config& c, std::string_view text, std::string_view label) {
                if (text.empty()) {
                    c.profile_first = c.profile_last = -1;
                    return;
                }
                const auto parse = [&](std::string_view part) {
                    const std::optional<std::int64_t> value = read_whole<std::int64_t>(part);
                    if (!value || *value < 0) throw_expected(label, kWhat, text);
                    return *value;
                };
                const std::size_t colon = text.find(':');
                if (colon == std::string_view::npos) throw_expected(label, kWhat, text);
                const std::int64_t first = parse(text.substr(0, colon));
                const std::int64_t last = parse(text.substr(colon + 1));
                if (first > last) throw_expected(label, kWhat, text);
                c.profile_first = first;
                c.profile_last = last;
            },
            [](const Config& c) {
                if (!c.profiles()) return std::string();
                return std::to_string(c.profile_first) + ":" + std::to_string(c.profile_last);
            }};
}

// `spec` for a key that cannot change a result (--resume may continue with another value).
KeySpec may_differ_on_resume(KeySpec spec) {
    spec.key.may_differ_on_resume = true;
    return spec;
}

// The one table of keys, in deck order.
const std::vector<KeySpec>& key_table() {
    using DK = DeviceKind;
    static const std::vector<KeySpec> table = [] {
        // depth's words come from its bound, as validate_config checks it (kMaxDepth).
        static const std::string depth_help =
            "slots in the ring (1.." + std::to_string(kMaxDepth) + ")";
        static const std::string depth_range = "1 to " + std::to_string(kMaxDepth);
        KeySpec depth = int_key("depth", &Config::depth, 1);
        depth.key.help = depth_help;
        depth.key.range = depth_range;
        std::vector<KeySpec> keys = {
            choice_key("device", "auto|cuda|cpu", &Config::device,
                       std::array{DK::auto_select, DK::cuda, DK::cpu}),
            transport_key(),
            sizes_key(),
            choice_key("dtype", "float32|float64", &Config::dtype,
                       std::array{DType::float32, DType::float64}),
            int_key("steps", &Config::steps, 1),
            int_key("warmup", &Config::warmup, 0),
            may_differ_on_resume(duration_key()),
            depth,
            choice_key("overlap", "on|off|compare", &Config::overlap,
                       std::array{OverlapMode::on, OverlapMode::off, OverlapMode::compare}),
            bool_key("blocking", &Config::blocking),
            bool_key("calibrate", &Config::calibrate),
            bool_key("graphs", &Config::graphs),
            int_key("graph_steps", &Config::graph_steps, 1),
            choice_key("launch", "host|device", &Config::launch,
                       std::array{Launch::host, Launch::device}),
            int_key("device_blocks", &Config::device_blocks, 0),
            counted_choice_key("timing", "auto|phases|sampled:K|steps",
                               "auto, phases, sampled:K with K >= 1 or steps", &Config::timing,
                               &Config::timing_every,
                               std::array{Timing::auto_select, Timing::phases, Timing::steps},
                               std::array{Timing::sampled}),
            size_key("c_elements", &Config::c_elements),
            int_key("c_iterations", &Config::c_iterations, 0),
            real_key("alpha", &Config::alpha, false),
            seed_key(),
            choice_key("pairing", "adjacent|split", &Config::pairing,
                       std::array{Pairing::adjacent, Pairing::split}),
            choice_key(
                "pattern", "pairs|broadcast|allreduce|relay", &Config::pattern,
                std::array{Pattern::pairs, Pattern::broadcast, Pattern::allreduce, Pattern::relay}),
            int_key("group_size", &Config::group_size, 0),
            size_key("chunk", &Config::chunk),
            choice_key("staging", "auto|on", &Config::staging,
                       std::array{Staging::auto_select, Staging::on}),
            choice_key("ipc_engine", "copy|sm", &Config::ipc_engine,
                       std::array{IpcEngine::copy, IpcEngine::sm}),
            may_differ_on_resume(text_key("output", "PATH", &Config::output)),
            may_differ_on_resume(bool_key("overwrite", &Config::overwrite)),
            may_differ_on_resume(bool_key("resume", &Config::resume)),
            counted_choice_key("write", "all|last|none|every:K",
                               "all, last, none or every:K with K >= 1", &Config::write,
                               &Config::write_every,
                               std::array{WriteMode::all, WriteMode::last, WriteMode::none},
                               std::array{WriteMode::every}),
            counted_choice_key(
                "step_record", "auto|all|none|every:K|last:N",
                "auto, all, none, every:K or last:N with K, N >= 1", &Config::step_record,
                &Config::step_record_count,
                std::array{StepRecord::auto_select, StepRecord::all, StepRecord::none},
                std::array{StepRecord::every, StepRecord::last}),
            int_key("flush_every", &Config::flush_every, 0),
            may_differ_on_resume(text_key("summary_json", "PATH", &Config::summary_json)),
            may_differ_on_resume(text_key("results_csv", "PATH", &Config::results_csv)),
            choice_key(
                "host_wait", "auto|prompt|sparing", &Config::host_wait,
                std::array{HostWaitMode::auto_select, HostWaitMode::prompt, HostWaitMode::sparing}),
            may_differ_on_resume(real_key("timeout_s", &Config::timeout_s, true)),
            may_differ_on_resume(bool_key("quiet", &Config::quiet)),
            bool_key("debug_skip_reuse_wait", &Config::debug_skip_reuse_wait),
            int_key("debug_delay_us", &Config::debug_delay_us, 0),
            int_key("debug_delay_rank", &Config::debug_delay_rank, 0),
            int_key("debug_stop_flush", &Config::debug_stop_flush, 0),
            bool_key("debug_stop_close", &Config::debug_stop_close),
            int_key("debug_stop_rank", &Config::debug_stop_rank, 0),
            text_key("tag", "TEXT", &Config::tag),
            may_differ_on_resume(profile_steps_key()),
            int_key("repeat", &Config::repeat, 0),
        };
        for (KeySpec& spec : keys) spec = worded(std::move(spec));
        return keys;
    }();
    return table;
}

const KeySpec& find_key(std::string_view key) {
    for (const KeySpec& spec : key_table()) {
        if (spec.key.name == key) return spec;
    }
    std::string message = "unknown key " + quote_for_message(key);
    if (const std::string hint = closest_key(key); !hint.empty()) {
        message += " (did you mean '" + hint + "'?)";
    }
    throw usage_error(message);
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
    static const std::vector<ConfigKey> keys = [] {
        std::vector<ConfigKey> out;
        for (const KeySpec& spec : key_table()) out.push_back(spec.key);
        return out;
    }();
    return keys;
}

std::string flag_of(std::string_view key) {
    std::string flag = "--" + std::string(key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

void set_config_value(Config& config, std::string_view key, std::string_view value,
                      std::string_view label) {
    find_key(key).set(config, value, label.empty() ? key : label);
}

std::string config_value_text(const Config& config, std::string_view key) {
    return find_key(key).get(config);
}

std::string config_value_toml(const Config& config, std::string_view key) {
    const KeySpec& spec = find_key(key);
    const std::string text = spec.get(config);
    // TOML integers are signed 64-bit: a larger size goes as a string, which parse_size reads.
    const bool bare = spec.toml_form == TomlForm::bare ||
                      (spec.toml_form == TomlForm::size && read_whole<std::int64_t>(text));
    return bare ? text : toml_quote(text);
}

std::string closest_key(std::string_view unknown) {
    std::vector<std::string_view> names;
    for (const KeySpec& spec : key_table()) names.push_back(spec.key.name);
    return closest_name(unknown, names);
}

}  // namespace gpurelay
