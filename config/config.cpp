// The key table and everything it drives: text and TOML parsing, TOML output and validation.
//
// Every key goes through one setter that reads text, whether the text came from a flag or from
// a deck value, so a deck and the command line accept exactly the same values and report
// the same errors.
#include "config/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <system_error>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
// timeout_s: from a millisecond (the unit waits count in) to a year.
constexpr double kMinTimeoutSeconds = 0.001;
constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

// How a key's text is written into TOML: quoted, or as a bare literal.
enum class TomlForm { bare, quoted, size };

struct KeySpec {
    ConfigKey key;
    TomlForm toml_form;
    // Reads `text` into the field; errors start with `label` (the key, or the flag).
    std::function<void(Config&, std::string_view text, std::string_view label)> set;
    // The field as text the setter reads back to the same value.
    std::function<std::string(const Config&)> get;
};

// The value as it appears in an error message: quoted, with control characters escaped so
// that the message stays on one line.
std::string quote_for_message(std::string_view text) {
    std::string out = "'";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (byte < 0x20 || byte == 0x7f) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        } else {
            out += c;
        }
    }
    return out + "'";
}

[[noreturn]] void throw_expected(std::string_view label, std::string_view what,
                                 std::string_view text) {
    throw usage_error(std::string(label) + ": expected " + std::string(what) + ", got " +
                      quote_for_message(text));
}

// A whole-string integer: no sign other than '-', no spaces, no trailing junk.
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
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    // Out of range ("1e999") is as wrong as "inf": a run cannot use either.
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        throw_expected(label, "a finite number", text);
    }
    return value;
}

bool parse_bool(std::string_view label, std::string_view text) {
    if (text == "true") return true;
    if (text == "false") return false;
    throw_expected(label, "true or false", text);
}

// Shortest text that reads back to the same double, always with a '.' or an exponent so that
// TOML sees a float and an integer key would reject it.
std::string format_real(double value) {
    std::array<char, 64> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    std::string text(buffer.data(), ec == std::errc() ? end : buffer.data());
    if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_quote(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (byte < 0x20 || byte == 0x7f) {
                    static constexpr char kHex[] = "0123456789ABCDEF";
                    out += "\\u00";
                    out += kHex[byte >> 4];
                    out += kHex[byte & 0xf];
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

std::size_t levenshtein(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// --- Key factories: one per kind of value, so the table below stays one line per key ----------

KeySpec int_key(std::string_view name, std::string_view help, std::int64_t Config::*field,
                std::int64_t min) {
    return {{name, help, min > 0 ? "INT>=1" : "INT>=0", false},
            TomlForm::bare,
            [field, min](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_int(label, text, min);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

KeySpec size_key(std::string_view name, std::string_view help, std::uint64_t Config::*field) {
    return {{name, help, "SIZE", false},
            TomlForm::size,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_size(label, text);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

KeySpec real_key(std::string_view name, std::string_view help, double Config::*field,
                 bool positive) {
    return {{name, help, positive ? "NUMBER>0" : "NUMBER", false},
            TomlForm::bare,
            [field, positive](Config& c, std::string_view text, std::string_view label) {
                const double value = parse_real(label, text);
                if (positive && !(value > 0)) throw_expected(label, "a positive number", text);
                c.*field = value;
            },
            [field](const Config& c) { return format_real(c.*field); }};
}

KeySpec bool_key(std::string_view name, std::string_view help, bool Config::*field) {
    return {{name, help, "true|false", true},
            TomlForm::bare,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_bool(label, text);
            },
            [field](const Config& c) { return std::string(c.*field ? "true" : "false"); }};
}

KeySpec text_key(std::string_view name, std::string_view help, std::string_view hint,
                 std::string Config::*field) {
    return {{name, help, hint, false},
            TomlForm::quoted,
            [field](Config& c, std::string_view text, std::string_view) { c.*field = text; },
            [field](const Config& c) { return c.*field; }};
}

// `hint` lists the choices as "a|b|c"; the error message repeats it.
template <class Enum, std::size_t N>
KeySpec choice_key(std::string_view name, std::string_view help, std::string_view hint,
                   Enum Config::*field, std::array<Enum, N> choices) {
    return {{name, help, hint, false},
            TomlForm::quoted,
            [field, choices, hint](Config& c, std::string_view text, std::string_view label) {
                for (const Enum choice : choices) {
                    if (to_string(choice) == text) {
                        c.*field = choice;
                        return;
                    }
                }
                throw_expected(label, "one of " + std::string(hint), text);
            },
            [field](const Config& c) { return std::string(to_string(c.*field)); }};
}

KeySpec seed_key() {
    return {{"seed", "seed of the formula that fills and checks the tensors", "UINT32", false},
            TomlForm::bare,
            [](Config& c, std::string_view text, std::string_view label) {
                std::uint64_t value = 0;
                const auto [end, ec] =
                    std::from_chars(text.data(), text.data() + text.size(), value);
                if (ec != std::errc() || end != text.data() + text.size() || value > kMax32) {
                    throw_expected(label, "an integer from 0 to 4294967295", text);
                }
                c.seed = static_cast<std::uint32_t>(value);
            },
            [](const Config& c) { return std::to_string(c.seed); }};
}

// K of "NAME:K" (an integer >= 1), or 0 when `text` is not of that form.
std::int64_t count_after(std::string_view text, std::string_view name) {
    if (!text.starts_with(name) || text.size() <= name.size() || text[name.size()] != ':') {
        return 0;
    }
    const std::string_view k_text = text.substr(name.size() + 1);
    std::int64_t k = 0;
    const auto [end, ec] = std::from_chars(k_text.data(), k_text.data() + k_text.size(), k);
    return ec == std::errc() && end == k_text.data() + k_text.size() && k >= 1 ? k : 0;
}

KeySpec write_key() {
    constexpr std::string_view kWhat = "all, last, none or every:K with K >= 1";
    return {
        {"write", "which steps of y are kept in the output file", "all|last|none|every:K", false},
        TomlForm::quoted,
        [kWhat](Config& c, std::string_view text, std::string_view label) {
            // write_every only means something for every:K; zero it otherwise so that two
            // configs that write the same steps compare equal.
            if (text == "all" || text == "last" || text == "none") {
                c.write = text == "all"    ? WriteMode::all
                          : text == "last" ? WriteMode::last
                                           : WriteMode::none;
                c.write_every = 0;
                return;
            }
            if (const std::int64_t k = count_after(text, "every"); k > 0) {
                c.write = WriteMode::every;
                c.write_every = k;
                return;
            }
            throw_expected(label, kWhat, text);
        },
        [](const Config& c) {
            std::string text(to_string(c.write));
            if (c.write == WriteMode::every) text += ":" + std::to_string(c.write_every);
            return text;
        }};
}

KeySpec timing_key() {
    constexpr std::string_view kWhat = "auto, phases, sampled:K with K >= 1 or steps";
    return {{"timing",
             "which steps time each phase with events: phases (every step), sampled:K (every "
             "K-th timed step from the first; the others time only their period), steps (none), "
             "auto (sampled:16 when a warm-up step takes under 0.25 ms, else phases)",
             "auto|phases|sampled:K|steps", false},
            TomlForm::quoted,
            [kWhat](Config& c, std::string_view text, std::string_view label) {
                // As write_every: zero unless sampled:K, so equal settings compare equal.
                c.timing_every = 0;
                if (text == "auto" || text == "phases" || text == "steps") {
                    c.timing = text == "auto"     ? Timing::auto_select
                               : text == "phases" ? Timing::phases
                                                  : Timing::steps;
                    return;
                }
                if (const std::int64_t k = count_after(text, "sampled"); k > 0) {
                    c.timing = Timing::sampled;
                    c.timing_every = k;
                    return;
                }
                throw_expected(label, kWhat, text);
            },
            [](const Config& c) {
                std::string text(to_string(c.timing));
                if (c.timing == Timing::sampled) text += ":" + std::to_string(c.timing_every);
                return text;
            }};
}

KeySpec profile_steps_key() {
    constexpr std::string_view kWhat = "A:B with 0 <= A <= B, or empty for no capture range";
    return {{"profile_steps",
             "steps A to B (0-based, warm-up included) inside cudaProfilerStart/Stop, for nsys "
             "--capture-range=cudaProfilerApi (empty: no range)",
             "A:B", false},
            TomlForm::quoted,
            [kWhat](Config& c, std::string_view text, std::string_view label) {
                if (text.empty()) {
                    c.profile_first = c.profile_last = -1;
                    return;
                }
                const auto parse = [&](std::string_view part) {
                    std::int64_t value = 0;
                    const auto [end, ec] =
                        std::from_chars(part.data(), part.data() + part.size(), value);
                    if (part.empty() || ec != std::errc() || end != part.data() + part.size() ||
                        value < 0) {
                        throw_expected(label, kWhat, text);
                    }
                    return value;
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

// The one table of keys, in deck order.
const std::vector<KeySpec>& key_table() {
    using DK = DeviceKind;
    using TK = TransportKind;
    static const std::vector<KeySpec> table = {
        choice_key("device", "where the kernels run", "auto|cuda|cpu", &Config::device,
                   std::array{DK::auto_select, DK::cuda, DK::cpu}),
        choice_key("transport", "how tensors move between ranks", "auto|nccl|mpi|ipc",
                   &Config::transport, std::array{TK::auto_select, TK::nccl, TK::mpi, TK::ipc}),
        size_key("elements", "values per tensor (at most 2^32-1)", &Config::elements),
        choice_key("dtype", "value type of the tensors", "float32|float64", &Config::dtype,
                   std::array{DType::float32, DType::float64}),
        int_key("steps", "total steps, warm-up included", &Config::steps, 1),
        int_key("warmup", "first steps left out of the timings", &Config::warmup, 0),
        int_key("depth", "slots in the ring (1..64)", &Config::depth, 1),
        choice_key("overlap", "overlap the exchange with compute, or run both and compare",
                   "on|off|compare", &Config::overlap,
                   std::array{OverlapMode::on, OverlapMode::off, OverlapMode::compare}),
        bool_key("blocking", "wait for each exchange before the next step", &Config::blocking),
        bool_key("graphs",
                 "replay each step after the first as CUDA graphs, captured once (CUDA path and "
                 "NCCL only)",
                 &Config::graphs),
        int_key("graph_steps",
                "graphs = true: consecutive steps captured in one graph (1, or a multiple of "
                "depth)",
                &Config::graph_steps, 1),
        timing_key(),
        size_key("c_elements", "values of the independent compute C (0 disables it)",
                 &Config::c_elements),
        int_key("c_iterations", "iterations of the compute C per step", &Config::c_iterations, 0),
        real_key("alpha", "scale factor in the step formula", &Config::alpha, false),
        seed_key(),
        choice_key("pairing", "which ranks exchange: neighbours or the two halves",
                   "adjacent|split", &Config::pairing,
                   std::array{Pairing::adjacent, Pairing::split}),
        size_key("chunk", "bytes per staged MPI message piece (at least 4096)", &Config::chunk),
        choice_key("staging",
                   "MPI through host staging buffers: auto (on the GPU path) or on (also on the "
                   "CPU path, to exercise the staging pipeline without a GPU)",
                   "auto|on", &Config::staging, std::array{Staging::auto_select, Staging::on}),
        text_key("output", "HDF5 result file", "PATH", &Config::output),
        bool_key("overwrite", "replace an existing output file", &Config::overwrite),
        bool_key("resume",
                 "continue OUTPUT.partial, left by a run stopped with SIGTERM or SIGINT, from "
                 "the step where it stopped",
                 &Config::resume),
        write_key(),
        int_key("flush_every", "flush the file every K steps (0: only at creation and the end)",
                &Config::flush_every, 0),
        text_key("summary_json", "JSON summary file (empty: none)", "PATH", &Config::summary_json),
        text_key("results_csv", "CSV timings file (empty: none)", "PATH", &Config::results_csv),
        real_key("timeout_s", "longest a rank waits on a peer, in seconds", &Config::timeout_s,
                 true),
        bool_key("quiet", "errors only: no progress, memory line or report (the files and CSV row are still written)", &Config::quiet),
        bool_key("debug_skip_reuse_wait", "tests only: drop the slot-reuse wait",
                 &Config::debug_skip_reuse_wait),
        text_key("tag", "free-text label stored with the results", "TEXT", &Config::tag),
        profile_steps_key(),
    };
    return table;
}

std::string unknown_key_message(std::string_view key) {
    std::string message = "unknown key " + quote_for_message(key);
    if (const std::string hint = closest_key(key); !hint.empty()) {
        message += " (did you mean '" + hint + "'?)";
    }
    return message;
}

const KeySpec& find_key(std::string_view key) {
    for (const KeySpec& spec : key_table()) {
        if (spec.key.name == key) return spec;
    }
    throw usage_error(unknown_key_message(key));
}

// A deck value as the text a flag would give; containers and dates are errors.
std::string node_text(const toml::node& node, std::string_view origin, std::string_view key) {
    const auto wrong = [&](std::string_view what) {
        return usage_error(std::string(origin) + ": " + quote_for_message(key) +
                           " must be a plain value, not " + std::string(what));
    };
    switch (node.type()) {
        case toml::node_type::string:
            return std::string(*node.value<std::string_view>());
        case toml::node_type::integer:
            return std::to_string(*node.value<std::int64_t>());
        case toml::node_type::floating_point:
            return format_real(*node.value<double>());
        case toml::node_type::boolean:
            return *node.value<bool>() ? "true" : "false";
        case toml::node_type::table:
            throw wrong("a table");
        case toml::node_type::array:
            throw wrong("an array");
        case toml::node_type::date:
            throw wrong("a date");
        case toml::node_type::time:
            throw wrong("a time");
        case toml::node_type::date_time:
            throw wrong("a date-time");
        case toml::node_type::none:
            break;
    }
    throw wrong("an empty node");
}

}  // namespace

// --- Names of the enumerations ------------------------------------------------------------------

std::string_view to_string(DeviceKind v) {
    switch (v) {
        case DeviceKind::auto_select:
            return "auto";
        case DeviceKind::cuda:
            return "cuda";
        case DeviceKind::cpu:
            return "cpu";
    }
    return "?";
}

std::string_view to_string(TransportKind v) {
    switch (v) {
        case TransportKind::auto_select:
            return "auto";
        case TransportKind::nccl:
            return "nccl";
        case TransportKind::mpi:
            return "mpi";
        case TransportKind::ipc:
            return "ipc";
    }
    return "?";
}

std::string_view to_string(DType v) {
    switch (v) {
        case DType::float32:
            return "float32";
        case DType::float64:
            return "float64";
    }
    return "?";
}

std::string_view to_string(OverlapMode v) {
    switch (v) {
        case OverlapMode::on:
            return "on";
        case OverlapMode::off:
            return "off";
        case OverlapMode::compare:
            return "compare";
    }
    return "?";
}

std::string_view to_string(Pairing v) {
    switch (v) {
        case Pairing::adjacent:
            return "adjacent";
        case Pairing::split:
            return "split";
    }
    return "?";
}

std::string_view to_string(Staging v) {
    switch (v) {
        case Staging::auto_select:
            return "auto";
        case Staging::on:
            return "on";
    }
    return "?";
}

std::string_view to_string(Timing v) {
    switch (v) {
        case Timing::auto_select:
            return "auto";
        case Timing::phases:
            return "phases";
        case Timing::sampled:
            return "sampled";
        case Timing::steps:
            return "steps";
    }
    return "?";
}

std::string_view to_string(WriteMode v) {
    switch (v) {
        case WriteMode::all:
            return "all";
        case WriteMode::last:
            return "last";
        case WriteMode::none:
            return "none";
        case WriteMode::every:
            return "every";
    }
    return "?";
}

std::size_t dtype_size(DType v) {
    return with_dtype(v, []<typename T>() { return sizeof(T); });
}

// --- Config members -----------------------------------------------------------------------------

std::uint64_t Config::tensor_bytes() const { return elements * dtype_size(dtype); }

bool Config::writes_step(std::int64_t step) const {
    if (step < 0 || step >= steps) return false;
    switch (write) {
        case WriteMode::all:
            return true;
        case WriteMode::last:
            return step == steps - 1;
        case WriteMode::none:
            return false;
        case WriteMode::every:
            return write_every > 0 && (step + 1) % write_every == 0;
    }
    return false;
}

std::int64_t Config::written_rows() const {
    switch (write) {
        case WriteMode::all:
            return steps;
        case WriteMode::last:
            return 1;
        case WriteMode::none:
            return 0;
        case WriteMode::every:
            return write_every > 0 ? steps / write_every : 0;
    }
    return 0;
}

std::vector<std::int64_t> Config::written_steps() const {
    // Row by row, not step by step: with every:K a loop over the steps would take long for
    // nothing before a large run starts.
    std::vector<std::int64_t> written(static_cast<std::size_t>(written_rows()));
    for (std::size_t row = 0; row < written.size(); ++row) {
        const auto r = static_cast<std::int64_t>(row);
        written[row] = write == WriteMode::all    ? r
                       : write == WriteMode::last ? steps - 1
                                                  : (r + 1) * write_every - 1;
    }
    return written;
}

// --- Keys ---------------------------------------------------------------------------------------

const std::vector<ConfigKey>& config_keys() {
    static const std::vector<ConfigKey> keys = [] {
        std::vector<ConfigKey> out;
        for (const KeySpec& spec : key_table()) out.push_back(spec.key);
        return out;
    }();
    return keys;
}

void set_config_value(Config& config, std::string_view key, std::string_view value) {
    set_config_value(config, key, value, key);
}

void set_config_value(Config& config, std::string_view key, std::string_view value,
                      std::string_view label) {
    find_key(key).set(config, value, label);
}

std::string config_value_text(const Config& config, std::string_view key) {
    return find_key(key).get(config);
}

std::string config_value_toml(const Config& config, std::string_view key) {
    const KeySpec& spec = find_key(key);
    std::string text = spec.get(config);
    switch (spec.toml_form) {
        case TomlForm::bare:
            return text;
        case TomlForm::quoted:
            return toml_quote(text);
        case TomlForm::size: {
            // TOML integers are signed 64-bit; a larger size goes as a string, which the size
            // parser reads just the same.
            std::int64_t as_signed = 0;
            const auto [end, ec] =
                std::from_chars(text.data(), text.data() + text.size(), as_signed);
            return ec == std::errc() ? text : toml_quote(text);
        }
    }
    return text;
}

std::string closest_name(std::string_view unknown,
                         const std::vector<std::string_view>& candidates) {
    // Short names get a fixed allowance, long ones a proportional one, so that "ovrelap" finds
    // "overlap" but "x" does not match every two-letter key.
    const std::size_t limit = std::max<std::size_t>(2, unknown.size() / 3);
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const std::string_view candidate : candidates) {
        const std::size_t distance = levenshtein(unknown, candidate);
        if (distance < best_distance) {
            best_distance = distance;
            best = candidate;
        }
    }
    return best;
}

std::string closest_key(std::string_view unknown) {
    std::vector<std::string_view> names;
    for (const KeySpec& spec : key_table()) names.push_back(spec.key.name);
    return closest_name(unknown, names);
}

std::uint64_t parse_size(std::string_view key, std::string_view text) {
    const auto bad = [&] {
        return usage_error(std::string(key) +
                           ": expected a size (an integer with an optional suffix k, K, Ki, M, "
                           "Mi, G, Gi, T or Ti), got " +
                           quote_for_message(text));
    };
    std::uint64_t count = 0;
    const char* const first = text.data();
    const char* const last = text.data() + text.size();
    // from_chars takes no sign, so "-4" and "+4" fail here as they should.
    const auto [digits_end, ec] = std::from_chars(first, last, count);
    if (ec == std::errc::invalid_argument) throw bad();
    const std::string_view suffix(digits_end, static_cast<std::size_t>(last - digits_end));
    struct Multiplier {
        std::string_view suffix;
        std::uint64_t factor;
    };
    static constexpr std::array<Multiplier, 10> kMultipliers = {{
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
    }};
    const auto multiplier = std::find_if(kMultipliers.begin(), kMultipliers.end(),
                                         [&](const Multiplier& m) { return m.suffix == suffix; });
    if (multiplier == kMultipliers.end()) throw bad();
    if (ec == std::errc::result_out_of_range ||
        count > std::numeric_limits<std::uint64_t>::max() / multiplier->factor) {
        throw usage_error(std::string(key) + ": " + quote_for_message(text) +
                          " is too large (at most 18446744073709551615)");
    }
    return count * multiplier->factor;
}

// --- Validation ---------------------------------------------------------------------------------

namespace {

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF):
// the deck travels to the other ranks as TOML, which holds nothing else.
bool is_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const int length = lead < 0x80           ? 1
                           : (lead >> 5) == 0x6  ? 2
                           : (lead >> 4) == 0xE  ? 3
                           : (lead >> 3) == 0x1E ? 4
                                                 : 0;
        if (length == 0 || i + static_cast<std::size_t>(length) > text.size()) return false;
        std::uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
        for (int k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
            if ((next >> 6) != 0x2) return false;
            code = (code << 6) | (next & 0x3F);
        }
        static constexpr std::uint32_t kLeast[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < kLeast[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            return false;
        }
        i += static_cast<std::size_t>(length);
    }
    return true;
}

}  // namespace

void validate_config(const Config& c) {
    const auto fail = [](const std::string& message) { throw usage_error(message); };
    if (c.steps < 1) fail("steps (" + std::to_string(c.steps) + ") must be at least 1");
    if (c.warmup < 0) fail("warmup (" + std::to_string(c.warmup) + ") must not be negative");
    if (c.warmup >= c.steps) {
        fail("warmup (" + std::to_string(c.warmup) + ") must be less than steps (" +
             std::to_string(c.steps) + "): no step would be timed");
    }
    if (c.depth < 1 || c.depth > 64) {
        fail("depth (" + std::to_string(c.depth) + ") must be from 1 to 64");
    }
    // The kernels index with 32-bit unsigned integers.
    if (c.elements < 1 || c.elements > kMax32) {
        fail("elements (" + std::to_string(c.elements) +
             ") must be from 1 to 4294967295: kernels index with 32-bit integers");
    }
    if (c.c_elements > kMax32) {
        fail("c_elements (" + std::to_string(c.c_elements) +
             ") must be at most 4294967295 (0 disables C): kernels index with 32-bit integers");
    }
    if (c.c_iterations < 0 || c.c_iterations > 4294967295LL) {
        // Kernel C counts its iterations in 32 bits.
        fail("c_iterations (" + std::to_string(c.c_iterations) + ") must be from 0 to 4294967295");
    }
    if (!std::isfinite(c.alpha)) fail("alpha (" + format_real(c.alpha) + ") must be finite");
    // B computes in the tensor's type: a float32 alpha must be a normal float32 (or 0), so it is
    // neither infinite nor flushed to 0 there; alpha x x then stays finite, as 0 <= x < 1.
    const double magnitude = std::fabs(c.alpha);
    if (c.dtype == DType::float32 && magnitude != 0 &&
        (magnitude > std::numeric_limits<float>::max() ||
         magnitude < std::numeric_limits<float>::min())) {
        fail("alpha (" + format_real(c.alpha) +
             ") is outside float32's range: with dtype = \"float32\" its magnitude must be 0 or "
             "from 1.17549e-38 to 3.40282e+38");
    }
    if (c.chunk < 4096) {
        fail("chunk (" + std::to_string(c.chunk) + ") must be at least 4096 bytes");
    }
    if (c.write == WriteMode::every && c.write_every < 1) {
        fail("write (every:" + std::to_string(c.write_every) + ") needs K of every:K >= 1");
    }
    if (c.timing == Timing::sampled && c.timing_every < 1) {
        fail("timing (sampled:" + std::to_string(c.timing_every) + ") needs K of sampled:K >= 1");
    }
    if (c.graph_steps < 1) {
        fail("graph_steps (" + std::to_string(c.graph_steps) + ") must be at least 1");
    }
    if (c.graph_steps > 1 && !c.graphs) {
        fail("graph_steps (" + std::to_string(c.graph_steps) +
             ") needs graphs = true: it says how many steps one graph holds");
    }
    if (c.graph_steps > 1 && c.graph_steps % c.depth != 0) {
        // Every graph then uses the slots in the same order, so one capture serves each launch.
        fail("graph_steps (" + std::to_string(c.graph_steps) +
             ") must be 1 or a multiple of depth (" + std::to_string(c.depth) + ")");
    }
    if (c.graph_steps > 1 && c.write != WriteMode::last && c.write != WriteMode::none) {
        // Only the last step of a graph could be copied out before the graph overwrites it.
        fail("graph_steps (" + std::to_string(c.graph_steps) +
             ") needs write = \"last\" or \"none\": a graph of several steps reuses each y slot "
             "before the writer could copy it out");
    }
    if (c.flush_every < 0) {
        fail("flush_every (" + std::to_string(c.flush_every) + ") must not be negative");
    }
    // Waits count milliseconds: below 1 ms a timeout would be 0, and above a year it means none
    // (and far above, the count overflows).
    if (!(c.timeout_s >= kMinTimeoutSeconds && c.timeout_s <= kMaxTimeoutSeconds)) {
        fail("timeout_s (" + format_real(c.timeout_s) + ") must be between " +
             format_real(kMinTimeoutSeconds) + " and " + format_real(kMaxTimeoutSeconds) +
             " seconds");
    }
    // Known before any device is opened; what auto picks is checked where it picks.
    if (c.graphs && c.device == DeviceKind::cpu) {
        fail(
            "graphs = true needs the CUDA path, but device = \"cpu\": host streams cannot be "
            "captured in a CUDA graph");
    }
    if (c.graphs && c.transport == TransportKind::mpi) {
        fail(
            "graphs = true needs transport = \"nccl\": the MPI transports run host-side work "
            "(MPI calls, staging threads) that a CUDA graph cannot capture");
    }
    if (c.graphs && c.transport == TransportKind::ipc) {
        fail(
            "graphs = true needs transport = \"nccl\": the ipc transport's waits count each "
            "slot's uses, and a graph would replay the first count for ever");
    }
    if (c.output.empty()) fail("output must not be empty: it names the HDF5 result file");
    for (const auto& [key, text] : {std::pair<const char*, const std::string&>{"output", c.output},
                                    {"summary_json", c.summary_json},
                                    {"results_csv", c.results_csv},
                                    {"tag", c.tag}}) {
        if (!is_utf8(text)) fail(std::string(key) + " is not valid UTF-8 text");
    }
    // The tag is one CSV field and one line of the report.
    if (std::any_of(c.tag.begin(), c.tag.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F; })) {
        fail("tag must not hold control characters (a line break would split its CSV row)");
    }
    if ((c.profile_first != -1 || c.profile_last != -1) &&
        (c.profile_first < 0 || c.profile_first > c.profile_last || c.profile_last >= c.steps)) {
        fail("profile_steps (" + std::to_string(c.profile_first) + ":" +
             std::to_string(c.profile_last) + ") must satisfy 0 <= A <= B < steps (" +
             std::to_string(c.steps) + ")");
    }
}

// --- TOML ---------------------------------------------------------------------------------------

std::string config_to_toml(const Config& config) {
    std::string out =
        "# gpurelay input deck: the resolved configuration (read back with --input)\n";
    for (const KeySpec& spec : key_table()) {
        out += std::string(spec.key.name) + " = " + config_value_toml(config, spec.key.name) + "\n";
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
