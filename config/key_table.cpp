// The key table: one line per key, made by one factory per kind of value, and the public
// functions that look keys up in it.
//
// Every key goes through one setter that reads text, whether the text came from a flag or from
// a deck value, so a deck and the command line accept exactly the same values and report
// the same errors.
#include <array>
#include <charconv>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "config/config.hpp"

#include "config/value_text.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using config_detail::format_real;
using config_detail::kMax32;
using config_detail::parse_bool;
using config_detail::parse_int;
using config_detail::parse_real;
using config_detail::quote_for_message;
using config_detail::throw_expected;
using config_detail::toml_quote;

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
            // Appended in two steps: GCC 12 warns falsely (-Wrestrict) on ":" + a temporary.
            if (c.write == WriteMode::every) (text += ':') += std::to_string(c.write_every);
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
                // As write's: two appends, for GCC 12's false -Wrestrict.
                if (c.timing == Timing::sampled) (text += ':') += std::to_string(c.timing_every);
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

std::string unknown_key_message(std::string_view key) {
    std::string message = "unknown key " + quote_for_message(key);
    if (const std::string hint = closest_key(key); !hint.empty()) {
        message += " (did you mean '" + hint + "'?)";
    }
    return message;
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
        choice_key("pattern",
                   "what each step moves: a tensor per producer/consumer pair, a broadcast from "
                   "each group's rank 0, or an all-reduce (sum) over each group",
                   "pairs|broadcast|allreduce", &Config::pattern,
                   std::array{Pattern::pairs, Pattern::broadcast, Pattern::allreduce}),
        int_key("group_size",
                "ranks per group of a broadcast or all-reduce, consecutive ranks (0: the whole "
                "world; must divide it)",
                &Config::group_size, 0),
        size_key("chunk", "bytes per staged MPI message piece (at least 4096)", &Config::chunk),
        choice_key("staging",
                   "MPI through host staging buffers: auto (on the GPU path) or on (also on the "
                   "CPU path, to exercise the staging pipeline without a GPU)",
                   "auto|on", &Config::staging, std::array{Staging::auto_select, Staging::on}),
        choice_key("ipc_engine",
                   "how transport = \"ipc\" moves a tensor: copy (the producer's copy engine "
                   "copies A's output into the consumer's slot) or sm (A itself writes into the "
                   "consumer's slot, on the producer's SMs: no copy)",
                   "copy|sm", &Config::ipc_engine, std::array{IpcEngine::copy, IpcEngine::sm}),
        text_key("output", "HDF5 result file", "PATH", &Config::output),
        bool_key("overwrite", "replace an existing output file", &Config::overwrite),
        bool_key("resume",
                 "continue OUTPUT.partial, left by a run stopped with SIGTERM, SIGINT or "
                 "SIGUSR1, from the step where it stopped",
                 &Config::resume),
        write_key(),
        int_key("flush_every", "flush the file every K steps (0: only at creation and the end)",
                &Config::flush_every, 0),
        text_key("summary_json", "JSON summary file (empty: none)", "PATH", &Config::summary_json),
        text_key("results_csv", "CSV timings file (empty: none)", "PATH", &Config::results_csv),
        real_key("timeout_s", "longest a rank waits on a peer, in seconds", &Config::timeout_s,
                 true),
        bool_key("quiet",
                 "errors only: no progress, memory line or report (the files and CSV row are still "
                 "written)",
                 &Config::quiet),
        bool_key("debug_skip_reuse_wait", "tests only: drop the slot-reuse wait",
                 &Config::debug_skip_reuse_wait),
        text_key("tag", "free-text label stored with the results", "TEXT", &Config::tag),
        profile_steps_key(),
    };
    return table;
}

const KeySpec& find_key(std::string_view key) {
    for (const KeySpec& spec : key_table()) {
        if (spec.key.name == key) return spec;
    }
    throw usage_error(unknown_key_message(key));
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

std::string closest_key(std::string_view unknown) {
    std::vector<std::string_view> names;
    for (const KeySpec& spec : key_table()) names.push_back(spec.key.name);
    return closest_name(unknown, names);
}

}  // namespace gpurelay
