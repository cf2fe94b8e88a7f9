// The key table: one line per key, made by one factory per kind of value, and the public
// functions that look keys up in it.
//
// Every key goes through one setter that reads text, whether the text came from a flag or from
// a deck value, so a deck and the command line accept exactly the same values and report
// the same errors.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "config/config.hpp"
#include "config/transport_choice.hpp"
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
    return {{name, help, min > 0 ? "INT>=1" : "INT>=0", false, "integer", {}, {}},
            TomlForm::bare,
            [field, min](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_int(label, text, min);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

KeySpec size_key(std::string_view name, std::string_view help, std::uint64_t Config::*field) {
    return {{name, help, "SIZE", false, "size", {}, {}},
            TomlForm::size,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_size(label, text);
            },
            [field](const Config& c) { return std::to_string(c.*field); }};
}

// `elements`: one size, or the sizes of a run of several (parse_size_list), written back as plain
// numbers ("4096,65536", a TOML string; one size stays a TOML integer).
KeySpec sizes_key(std::string_view name, std::string_view help) {
    return {{name, help, "SIZE|LIST|RANGE", false, "size, or a list or range of sizes", {}, {}},
            TomlForm::size,
            [](Config& c, std::string_view text, std::string_view label) {
                std::vector<std::uint64_t> sizes = parse_size_list(label, text);
                c.elements = sizes.front();
                if (sizes.size() == 1) sizes.clear();
                c.sizes = std::move(sizes);
            },
            [](const Config& c) {
                std::string text;
                for (const std::uint64_t size : c.size_list()) {
                    if (!text.empty()) text += ',';
                    text += std::to_string(size);
                }
                return text;
            }};
}

KeySpec real_key(std::string_view name, std::string_view help, double Config::*field,
                 bool positive) {
    return {{name, help, positive ? "NUMBER>0" : "NUMBER", false, "number", {}, {}},
            TomlForm::bare,
            [field, positive](Config& c, std::string_view text, std::string_view label) {
                const double value = parse_real(label, text);
                if (positive && !(value > 0)) throw_expected(label, "a positive number", text);
                c.*field = value;
            },
            [field](const Config& c) { return format_real(c.*field); }};
}

KeySpec bool_key(std::string_view name, std::string_view help, bool Config::*field) {
    return {{name, help, "true|false", true, "boolean", {}, {}},
            TomlForm::bare,
            [field](Config& c, std::string_view text, std::string_view label) {
                c.*field = parse_bool(label, text);
            },
            [field](const Config& c) { return std::string(c.*field ? "true" : "false"); }};
}

KeySpec text_key(std::string_view name, std::string_view help, std::string_view hint,
                 std::string Config::*field) {
    return {{name, help, hint, false, "text", {}, {}},
            TomlForm::quoted,
            [field](Config& c, std::string_view text, std::string_view) { c.*field = text; },
            [field](const Config& c) { return c.*field; }};
}

// `hint` lists the choices as "a|b|c"; the error message repeats it. (`Enum` comes from the
// choices, so that a field of PipelineKeys converts to a field of Config.)
template <class Enum, std::size_t N>
KeySpec choice_key(std::string_view name, std::string_view help, std::string_view hint,
                   std::type_identity_t<Enum Config::*> field, std::array<Enum, N> choices) {
    return {{name, help, hint, false, "choice", {}, {}},
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

// `transport`: auto, or a name of the transports' table, which lists the choices.
KeySpec transport_key() {
    static const std::string hint = [] {
        std::string text;
        for (const std::string_view name : transport_names())
            (text += text.empty() ? "" : "|") += name;
        return text;
    }();
    return {{"transport", "how tensors move between ranks", hint, false, "choice", {}, {}},
            TomlForm::quoted,
            [](Config& c, std::string_view text, std::string_view label) {
                for (const std::string_view name : transport_names()) {
                    if (name == text) {
                        c.transport = name;
                        return;
                    }
                }
                throw_expected(label, "one of " + hint, text);
            },
            [](const Config& c) { return c.transport; }};
}

KeySpec seed_key() {
    return {{"seed",
             "seed of the formula that fills and checks the tensors",
             "UINT32",
             false,
             "integer",
             {},
             {}},
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

// A choice of which some take a count: `plain` are bare names, `counted` written NAME:K (K >= 1)
// with K in `count`, which is zero otherwise, so that two equal settings compare equal.
template <class Enum, std::size_t P, std::size_t C>
KeySpec counted_choice_key(std::string_view name, std::string_view help, std::string_view hint,
                           std::string_view what, std::type_identity_t<Enum Config::*> field,
                           std::int64_t Config::*count, std::array<Enum, P> plain,
                           std::array<Enum, C> counted) {
    const auto is_counted = [counted](Enum choice) {
        return std::find(counted.begin(), counted.end(), choice) != counted.end();
    };
    return {{name, help, hint, false, "choice", {}, {}},
            TomlForm::quoted,
            [=](Config& c, std::string_view text, std::string_view label) {
                c.*count = 0;
                for (const Enum choice : plain) {
                    if (text == to_string(choice)) {
                        c.*field = choice;
                        return;
                    }
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
                if (is_counted(c.*field)) (text += ':') += std::to_string(c.*count);
                return text;
            }};
}

KeySpec write_key() {
    return counted_choice_key(
        "write", "which steps of y are kept in the output file", "all|last|none|every:K",
        "all, last, none or every:K with K >= 1", &Config::write, &Config::write_every,
        std::array{WriteMode::all, WriteMode::last, WriteMode::none}, std::array{WriteMode::every});
}

KeySpec timing_key() {
    return counted_choice_key(
        "timing",
        "which steps time each phase with events: phases (every step), sampled:K (every K-th "
        "timed step from the first; the others time only their period), steps (none), auto "
        "(sampled:16 when a warm-up step takes under 0.25 ms, else phases)",
        "auto|phases|sampled:K|steps", "auto, phases, sampled:K with K >= 1 or steps",
        &Config::timing, &Config::timing_every,
        std::array{Timing::auto_select, Timing::phases, Timing::steps},
        std::array{Timing::sampled});
}

KeySpec step_record_key() {
    return counted_choice_key(
        "step_record",
        "which steps' times and wrong-element counts the file keeps in /timings and "
        "/verification: all, every:K, last:N, none, or auto (all up to 10,000 steps, the last "
        "10,000 beyond); the histograms of every timed step are kept always",
        "auto|all|none|every:K|last:N", "auto, all, none, every:K or last:N with K, N >= 1",
        &Config::step_record, &Config::step_record_count,
        std::array{StepRecord::auto_select, StepRecord::all, StepRecord::none},
        std::array{StepRecord::every, StepRecord::last});
}

// `duration`: a number of seconds with a unit (s, m, h, d; none: seconds), up to a year; empty
// for none. Written back in the largest unit it is a whole number of.
KeySpec duration_key() {
    constexpr std::string_view kWhat =
        "a duration such as 20s, 10m, 1.5h or 1d, from 1 ms to a year, or empty for none";
    static constexpr std::pair<char, double> kUnits[] = {
        {'d', 86400.0}, {'h', 3600.0}, {'m', 60.0}, {'s', 1.0}};
    return {{"duration",
             "run steps until this wall time from the launch's start (20s, 10m, 1h), agreed by "
             "the ranks so that every rank stops after the same step; with steps, whichever "
             "comes first (empty: steps alone)",
             "DURATION",
             false,
             "duration",
             {},
             {}},
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
                double value = 0;
                const auto [end, ec] =
                    std::from_chars(text.data(), text.data() + text.size(), value);
                value *= unit;
                if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0.001) ||
                    value > 365.0 * 86400) {
                    throw_expected(label, kWhat, given);
                }
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
    return {{"profile_steps",
             "steps A to B (0-based, warm-up included) inside cudaProfilerStart/Stop, for nsys "
             "--capture-range=cudaProfilerApi (empty: no range)",
             "A:B",
             false,
             "text",
             {},
             {}},
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

// `spec` with what docs/CONFIG.md says beside its help line: the accepted values in words (empty
// for a choice or a boolean, whose hint lists them) and a paragraph (empty where the help line
// says it all).
KeySpec documented(KeySpec spec, std::string_view range, std::string_view details = {}) {
    spec.key.range = range;
    spec.key.details = details;
    return spec;
}

// `spec` for a key that cannot change a result, so that --resume may continue a file started with
// another value of it. Every other key must match the stored deck.
KeySpec may_differ_on_resume(KeySpec spec) {
    spec.key.may_differ_on_resume = true;
    return spec;
}

// --- CONFIG.md's paragraphs, one per key that needs more than its help line --------------------

constexpr std::string_view kDeviceDoc =
    "`auto` takes the GPU when one is visible and the CPU path otherwise. Each process drives "
    "one GPU: its node-local rank modulo the GPUs it can see, so `CUDA_VISIBLE_DEVICES`, `srun "
    "--gpus-per-task=1` and `--gpus-per-node` all work. The CPU path runs the same pipeline on "
    "host memory and host streams (asynchronous in-order queues with events), so everything "
    "but the CUDA code is tested without a GPU.";
constexpr std::string_view kTransportDoc =
    "The table below is the transports' own (`transport/transport_table.cpp`), most preferred "
    "first. `auto` takes the first that runs on the run's path (on the CPU path MPI's staged "
    "form with `staging = on`, its host form without) and serves its pattern, and whose needs "
    "the ranks meet (a pair on one node, MPI's shared-memory node, where it does not go across "
    "nodes; a GPU of its own for each rank where ranks may not share one); the report says what "
    "`auto` chose and why it passed over one before it. A transport named that the run cannot "
    "use is refused at start (exit 2), with its reason. `mpi` on the GPU path stages through "
    "pinned host memory in `chunk` pieces (there is no CUDA-aware MPI path). `ipc` copies each "
    "tensor once, from the producer's buffer into the consumer's receive slot in another "
    "process of the same node: GPU memory made with `cuMemCreate` and passed as a file "
    "descriptor over a Unix socket where the driver allows (else `cudaIpcGetMemHandle`), an "
    "MPI-3 shared-memory window on the CPU path. "
    "Each slot carries two sequence words that only grow (`arrived`, `released`), waited on "
    "and written by the GPU's front end (`cuStreamWaitValue32`, `cuStreamWriteValue32`), so "
    "the host never waits for its peer. With one rank (`-np 1`) the rank is producer and "
    "consumer on separate streams: NCCL sends to itself, and `ipc` is a plain device copy.";

// kTransportDoc, then the transports' table (config/transport_choice.cpp).
std::string_view transport_doc() {
    static const std::string doc = [] {
        std::string text = std::string(kTransportDoc) + "\n\n" + transport_table_markdown();
        text.pop_back();  // a key's paragraph ends without its line break
        return text;
    }();
    return doc;
}
constexpr std::string_view kElementsDoc =
    "Sizes take the suffixes `Ki Mi Gi Ti` (powers of 1024) or `k K M G T` (powers of 1000): "
    "`64Mi` float32 values are 256 MiB. The kernels index with 32-bit integers, hence the "
    "upper limit. Several sizes run in turn in one launch, as nccl-tests sweeps them: a list "
    "`4Ki,64Ki,1Mi`, or a range `4Ki:256Mi:x4` (each size times 4 while at most the last) or "
    "`1Ki:8Ki:+1Ki` (plus 1Ki each). The communicator, streams and slots are made once, for the "
    "largest size (checked against memory before anything is allocated); each size has its own "
    "cold step, warm-up and timed steps, its own ceilings, a row of the report's closing table, "
    "a case in the JSON, a row in the CSV and a group in the file (docs/OUTPUT.md).";
constexpr std::string_view kStepsDoc =
    "Step 0 is timed alone and reported as the cold step (it includes NCCL's connection "
    "set-up); steps 0 to `warmup` − 1 are left out of every statistic.";
constexpr std::string_view kDurationDoc =
    "For soak tests and jobs that should fill their allocation. The time counts from the "
    "launch's start, on each rank's clock; the ranks agree through the stop vote (at most two "
    "cadences after the time is up: about 1 s with steps of 4 ms or more, 256 steps below) that "
    "every rank ends after the same step. A run of several passes or sizes gives each pass an "
    "equal share: pass k of the P this launch runs ends once (k + 1) / P of the duration has "
    "passed (after its warm-up and one timed step at least), or at `steps`. Without `steps`, "
    "`steps` is 10^15 (no limit): the file is then laid out for an unknown number of steps, so "
    "`write` must be `last` or `none` and `step_record` `auto`, `last:N` or `none` (the file's "
    "size announced at start holds), and `launch = \"device\"` (which stamps every step on the "
    "device) is refused. With a duration `write` is `last` or `none` in any case: `last` keeps "
    "the last step run (its number in `/step`), while the rows of `all` and `every:K` are laid "
    "out before the run. A run that ends by its duration is complete (exit 0); a resumed run "
    "gets its whole duration again.";
constexpr std::string_view kDepthDoc =
    "A slot is written again only after B of the step that last read it (a GPU-side wait, "
    "never the host); `debug_skip_reuse_wait` drops that wait to show that it matters.";
constexpr std::string_view kCalibrateDoc =
    "Where the first pass's timed steps start (after the cold step and the warm-up, every stream "
    "idle), each rank measures, alone and untimed in the step statistics: its transport moving "
    "the same bytes through the same slots and streams with no A, B or C (the bare transfer), a "
    "device copy of the tensor (the ceiling of A and B) and C alone, 2 + 10 times each. The "
    "report, the JSON summary and the CSV give each phase against its ceiling and the "
    "calibration's cost. The copy takes two tensors of memory for its duration.";
constexpr std::string_view kOverlapDoc =
    "`off` puts the receive, C and B on one stream; `on` puts the receive on a comm stream of "
    "higher priority beside C; `compare` runs `off` then `on` in one process and reports the "
    "overlap speedup and the step against perfect overlap. Only the `on` pass writes `/y`; "
    "when it waited on the file writer, the report says the speedup includes I/O (and the "
    "JSON sets `overlap_speedup_includes_io`).";
constexpr std::string_view kGraphsDoc =
    "After the cold step, steps are replays of CUDA graphs captured once per ring position, "
    "each covering all the rank's streams (A, the NCCL send and receive, C, B, the checks, and "
    "the events the step records), so a step costs one launch. The kernels read their step "
    "from a device word plus their place in the ring's cycle, so no graph node updates it "
    "per step. NCCL's graph mixing is turned off (`NCCL_GRAPH_MIXING_SUPPORT=0`, unless set) so "
    "that a captured NCCL call adds no event nodes. Refused with `device = cpu`, over a "
    "transport without `graphs` in the table under `transport` (host-side work, or waits on "
    "counts, cannot be replayed), and with a collective `pattern`. One graph runs whole after the "
    "one before, so consecutive steps "
    "overlap only inside a graph: see `graph_steps`.";
constexpr std::string_view kLaunchDoc =
    "`host` queues every step from the host (eagerly, or as CUDA graphs with `graphs`). `device` "
    "launches one persistent kernel per role for a whole pass, which runs every step itself: "
    "the producer waits for the consumer's release of a slot, runs A straight into it and "
    "publishes its arrival; the consumer waits for the arrival, runs B and releases the slot, "
    "through the ipc transport's sequence words, with no host in the loop. C runs beside them "
    "on its own stream, queued by the host, each C before its step's B (and, with `overlap = "
    "off`, after the step's tensor has arrived). Each wait on the device is bounded by "
    "`timeout_s` on the GPU's global timer; a SIGTERM or SIGUSR1 reaches the producer through a "
    "word it reads once a step, and the consumer through the arrival word, so both stop after "
    "the same step. Each role stamps its steps on the device's clock; the report gives the same "
    "figures as for `host`, without ceilings (`calibrate` measures none). A written step's y "
    "slot is held until the host has copied it out (`write = all` and `every:K`): a host that "
    "falls `depth` steps behind holds the consumer up. It needs a transport with `launch = "
    "device` in the table under `transport`, with `ipc_engine = sm`, and one pair (`pattern = "
    "pairs`, `-np 1` or `2`: the producer alone "
    "decides where a stopped pass ends), and refuses `graphs`, `blocking` and `timing` other "
    "than `auto` or `phases`. Two ranks on one GPU want MPS (`scripts/with-mps`): time-sliced, "
    "each role waits for the other's slice. A role's kernel runs as many blocks of 256 threads "
    "as its tensor fills, at most `device_blocks` (0: one per SM), and the two roles' blocks "
    "must fit on the GPU together (an occupancy query, before the launch). On the CPU path each "
    "role is a host stream's thread, with a thread for each further block.";
constexpr std::string_view kGraphStepsDoc =
    "A graph starts at a step that is a multiple of `graph_steps`; the steps before the first "
    "such, and a remainder at the end, run eagerly, and no graph straddles the end of the "
    "warm-up. More steps per launch amortize the launch for the smallest tensors. Needs "
    "`write = \"last\"` or `\"none\"`, since a graph reuses each `y` slot before the writer "
    "could copy it out.";
constexpr std::string_view kTimingDoc =
    "`phases` records the phase events on every step; `sampled:K` on every K-th timed step "
    "from the first (with graphs, on the first step of every K-th graph); `steps` on none (no "
    "phase statistics and no step bound). A step that records no phase events and is not "
    "written shares its end event with the other steps of its retire group, up to 4 "
    "consecutive steps (with graphs, the fewest whole graphs that hold 4 steps): the host reads "
    "one event a group, and each of its steps gets the group's period over its steps (in the "
    "report, the JSON and `/timings`). `auto` is `sampled:16` in a pass whose warm-up steps "
    "took under 0.25 ms each on the slowest rank (a phase-timed step costs the host about 9 "
    "more event records, which so short a step cannot hide), else `phases`. The report and "
    "the JSON say what a pass used and how many of its steps carry phase times; the file has "
    "NaN in the phases of the others. Use `phases` to time every step on its own.";
constexpr std::string_view kCDoc =
    "C runs `c_iterations` steps of a 32-bit LCG on each of `c_elements` values, on the "
    "consumer's compute stream, while the tensor is received: the work that overlap hides. "
    "Size it to the transfer to measure overlap (`lab/gpu-check` calibrates it that way): "
    "the default is light, so that a first run on the CPU path finishes in seconds.";
constexpr std::string_view kAlphaDoc =
    "B computes `y = alpha * x` in the tensor's type, so with float32 `alpha` must be 0 or a "
    "normal float32, which keeps `y` finite and the check exact.";
constexpr std::string_view kSeedDoc =
    "A's formula uses `u >> 8`, so two seeds that differ only in their low 8 bits give the same "
    "tensors ([OUTPUT.md](OUTPUT.md) has the formulas).";
constexpr std::string_view kPairingDoc =
    "With an even world size, `adjacent` pairs rank 2k with 2k+1 (the same node under block "
    "placement), `split` pairs rank k with k + N/2 (across nodes). Pairs only: collectives "
    "form groups of consecutive ranks.";
constexpr std::string_view kPatternDoc =
    "`broadcast`: each group's rank 0 runs A and broadcasts it; every other rank receives it, "
    "runs C beside the receive and B after it. `allreduce`: every rank runs A with its group "
    "rank folded in, the group sums the shares, and every rank runs B on the sum. On the GPU "
    "these are `ncclBroadcast` and `ncclAllReduce` on one communicator per group (one GPU per "
    "rank); with `transport = mpi`, or `auto` where ranks share a GPU, `MPI_Ibcast` and "
    "`MPI_Iallreduce` through a pinned buffer. The report, JSON and CSV give the collective's "
    "algbw and busbw in nccl-tests' conventions (busbw = algbw × 1 for a broadcast, × 2(n−1)/n "
    "for an all-reduce over n ranks). Refused over a transport without `collectives` in the "
    "table under `transport`, with `graphs = true` and with `pairing = split`. `relay`: the ranks "
    "of each group form a line of stages: stage 0 runs A "
    "and sends x to stage 1; each middle stage receives, runs C beside the receive, runs B "
    "straight into its outgoing slot and sends that on; the last stage receives and runs B. "
    "Each link is a pair of its own over the pair transports (every transport and path pairs "
    "run, graphs where the pair has them), each slot is written again only after the next "
    "stage's B has read it, and stage k's y is alpha^k times A's output (exact when alpha is "
    "a power of two).";
constexpr std::string_view kGroupSizeDoc =
    "An all-reduce group holds at most 256 ranks, so that any partial sum of the shares stays "
    "exact in float32 and the check stays bit for bit. A relay has at least 2 stages. Only with "
    "a collective `pattern` or a relay.";
constexpr std::string_view kStagingDoc =
    "The host-staged MPI transport copies piece p+1 to the host while piece p is sent (and on "
    "the other side receives p+1 while p is copied to the GPU), with one MPI proxy thread per "
    "direction. `on` runs the same staging on the CPU path, so CI tests it.";
constexpr std::string_view kIpcEngineDoc =
    "`copy` uses a copy engine and leaves the SMs to A and C; the report's transfer is the "
    "copy. `sm` has no copy and no send slots: A's stores are the transfer (through the "
    "mapping: local memory on one GPU, NVLink or PCIe between two), and the report's transfer "
    "is only the arrival signal. Only with a transport that lets A write in place (`A in place` "
    "in the table under `transport`): with any other, `auto` included, it is refused.";
constexpr std::string_view kOutputDoc =
    "Empty (the default): each run writes a file of its own, "
    "`outputs/gpurelay-YYYYMMDD-HHMMSS.h5` at the local time it starts (with `-jobJ`, the job "
    "id, in a Slurm job; `-2`, `-3` ... for runs started in the same second), named in the "
    "report's header, so a command run again keeps the last result. The file is written as "
    "`OUTPUT.partial` and renamed when the run completes. An existing "
    "file, or a `.partial` that `resume` could finish, is replaced only with `overwrite`, and "
    "only ever a regular file (never a directory, FIFO or device). One job at a time per "
    "output: `OUTPUT.lock` is held with `flock` for the run. [OUTPUT.md](OUTPUT.md) has the "
    "layout, [OPERATIONS.md](OPERATIONS.md) what is left after a failure.";
constexpr std::string_view kResumeDoc =
    "The stop line prints the command that continues the file (`... --output PATH --resume`). "
    "Every key that can change a result must match the deck stored in the file (those that may "
    "differ are listed under the table above), or the run is refused (exit 2), naming each key "
    "that differs with both values; the run continues from `stopped_at_step` (a `.partial` that "
    "is already complete is only renamed), and `/y` then equals an uninterrupted run's. Without "
    "an output of its own, `--resume` looks at the newest 16 `outputs/gpurelay-*.h5.partial` "
    "and continues the one whose deck matches (this Slurm job's own first, then the newest); "
    "where none does, it is refused with each one's tag, start, steps done, the keys that "
    "differ and the command that resumes it. The file's `launches` attribute keeps every "
    "launch's start, steps and git hash ([OUTPUT.md](OUTPUT.md)). A `.partial` left by a rank "
    "killed mid-step cannot be resumed ([OPERATIONS.md](OPERATIONS.md)).";
constexpr std::string_view kWriteDoc =
    "`last` keeps the last step's `y`, `all` every step's, `every:K` every K-th step's (steps "
    "K−1, 2K−1, ...) and `none` none (the timings and counts are still written). Rows are "
    "copied out on an io "
    "stream into three pinned buffers and written by a host thread, so writing holds a pass "
    "up only when the file is slower than the steps.";
constexpr std::string_view kStepRecordDoc =
    "Every timed step's phase times go into one histogram per phase and pass on each rank "
    "(log-spaced buckets, within 0.5% of any value), summed over the ranks at the pass's end: "
    "the report's percentiles come from those, and the file keeps them in `/histograms` "
    "([OUTPUT.md](OUTPUT.md)), so memory and file stay the same size however many steps run. "
    "`step_record` chooses which steps' own values `/timings` and `/verification` also keep, a "
    "column each (80 bytes a kept step on each rank until the pass's end; in the file 64 a rank, "
    "the 7 times and the step's number, and 16 a pair): "
    "`all` (for Nsight Systems correlation and short runs), a sample (`every:K`, `last:N`) or "
    "`none`. `auto` keeps every step up to 10,000 steps and the last 10,000 beyond, so a run's "
    "memory and file stop growing at 10,000 steps.";
constexpr std::string_view kFlushDoc =
    "So a crash keeps the rows written so far. The flush is collective, and bounded by "
    "`timeout_s` like every other wait: a peer that stops during one ends the job with exit 4, "
    "the others naming the flush.\n\n"
    "What a flush costs: every rank stops queueing steps, waits for the rows it has queued to "
    "be written, then joins HDF5's flush, collective over every rank of the job (an all-reduce "
    "and an `MPI_File_sync` of the file on every rank, counted on the CPU path). So each flush "
    "makes every pair wait for the slowest rank and for the file system to sync the rows of "
    "every writer, which the steps otherwise never do (the stop vote is waited for only long "
    "after every live rank has cast it). On a cluster, where that sync of one shared file from "
    "thousands of ranks can take seconds ([OPERATIONS.md](OPERATIONS.md#the-model-at-scale)), "
    "choose K so that flushes come minutes apart, or leave it at 0 and rely on the close that "
    "a stop makes (SIGTERM, Slurm's time limit).";
constexpr std::string_view kSideOutputsDoc =
    "The JSON is written as `PATH.tmp` and renamed; the CSV gets one row per run, appended "
    "under a lock (so job-array tasks can share a file) with a header when new, and its side "
    "tables `NAME.ranks.csv` and `NAME.links.csv` a row per rank and per link. A CSV whose "
    "columns differ is refused at start (exit 2). [OUTPUT.md](OUTPUT.md) lists their fields.";
constexpr std::string_view kHostWaitDoc =
    "A host thread that waits (for an MPI request, a GPU event, a peer's sequence word) first "
    "yields its core for 100 to 200 us, then sleeps between looks. Under `prompt` each sleep is "
    "the shortest there is (about 50 us), so a wait ends at most that late: a relay or a staged "
    "transport, whose stages hand each tensor on through such waits, keeps its pace, and MPI "
    "keeps a large message moving (its progress runs only inside the waits' calls). Under "
    "`sparing` a long wait's sleeps grow to 1 ms, so where working threads outnumber cores a "
    "waiting one leaves its core to them, at the cost of up to that much per wait. `auto` picks "
    "`prompt` on the GPU path, where the hosts' threads only feed and wait for the GPU (with "
    "`sparing`, a staged pair of 64 Mi values took 4.5 times as long a step, and a 4-stage "
    "staged relay of 4 KiB 17 times); on the CPU path, where the host streams do the work, it "
    "counts each node's working threads (every rank's main thread and host streams) against the "
    "cores its ranks may use (their affinity), and picks `prompt` only where every node has a "
    "core for each. The report's header says which policy ran and why.";
constexpr std::string_view kTimeoutDoc =
    "Bounds every wait on a peer: MPI waits, barriers and reductions (a watchdog thread), waits "
    "on the GPU (polled, with NCCL's asynchronous error checked), CPU-path stream waits, the "
    "file's collective calls (making, opening, flushing and closing it), the stop vote and "
    "`MPI_Finalize`. The rank that gives up names itself, the step and the wait, and the job "
    "ends with exit 4.";
constexpr std::string_view kQuietDoc =
    "Without it, rank 0 prints a progress line on long runs (refreshed in place only when "
    "gpurelay is alone on a terminal; under `mpirun`, Slurm or into a log, a whole line every "
    "10 s) and the report.";
constexpr std::string_view kProfileDoc =
    "`cudaProfilerStart` comes just before step A is queued and `cudaProfilerStop` once step B "
    "has finished, so `nsys profile --capture-range=cudaProfilerApi` (what `scripts/profile` "
    "passes) records exactly those steps. With `overlap = compare` only the first pass is "
    "recorded: profile `on` and `off` as separate runs.";

// The one table of keys, in deck order.
const std::vector<KeySpec>& key_table() {
    using DK = DeviceKind;
    // depth's bound as validate_config checks it (kMaxDepth).
    static const std::string depth_help =
        "slots in the ring (1.." + std::to_string(kMaxDepth) + ")";
    static const std::string depth_range = "1 to " + std::to_string(kMaxDepth);
    static const std::vector<KeySpec> table = {
        documented(choice_key("device", "where the kernels run", "auto|cuda|cpu", &Config::device,
                              std::array{DK::auto_select, DK::cuda, DK::cpu}),
                   {}, kDeviceDoc),
        documented(transport_key(), {}, transport_doc()),
        documented(sizes_key("elements",
                             "values per tensor (at most 2^32-1), or a list or range of sizes "
                             "run in turn"),
                   "1 to 2^32−1 each; at most 64 sizes", kElementsDoc),
        choice_key("dtype", "value type of the tensors", "float32|float64", &Config::dtype,
                   std::array{DType::float32, DType::float64}),
        documented(int_key("steps",
                           "total steps, warm-up included (with a duration and no steps: no "
                           "limit, 10^15)",
                           &Config::steps, 1),
                   "≥ 1", kStepsDoc),
        documented(int_key("warmup", "first steps left out of the timings", &Config::warmup, 0),
                   "0 to steps − 1", kStepsDoc),
        may_differ_on_resume(documented(
            duration_key(), "1 ms to a year (`s`, `m`, `h`, `d`), or empty", kDurationDoc)),
        documented(int_key("depth", depth_help, &Config::depth, 1), depth_range, kDepthDoc),
        documented(
            choice_key("overlap", "overlap the exchange with compute, or run both and compare",
                       "on|off|compare", &Config::overlap,
                       std::array{OverlapMode::on, OverlapMode::off, OverlapMode::compare}),
            {}, kOverlapDoc),
        bool_key("blocking", "wait for each exchange before the next step", &Config::blocking),
        documented(bool_key("calibrate",
                            "measure the ceilings (bare transfer, a copy, C alone) before the "
                            "timed steps",
                            &Config::calibrate),
                   {}, kCalibrateDoc),
        documented(bool_key("graphs",
                            "replay each step after the first as CUDA graphs, captured once (CUDA "
                            "path, over a transport that allows them)",
                            &Config::graphs),
                   {}, kGraphsDoc),
        documented(int_key("graph_steps",
                           "graphs = true: consecutive steps captured in one graph (1, or a "
                           "multiple of depth)",
                           &Config::graph_steps, 1),
                   "1, or a multiple of depth (> 1 only with graphs)", kGraphStepsDoc),
        documented(
            choice_key("launch",
                       "who queues each step: host (the host's launches) or device (one "
                       "persistent kernel per role runs every step of a pass)",
                       "host|device", &Config::launch, std::array{Launch::host, Launch::device}),
            {}, kLaunchDoc),
        documented(int_key("device_blocks",
                           "launch = device: the most blocks each role's persistent kernel runs "
                           "(0: one per SM; on the CPU path threads, 0: one)",
                           &Config::device_blocks, 0),
                   "0 to 4096 (> 0 only with launch = device)", kLaunchDoc),
        documented(timing_key(), "`auto`, `phases`, `sampled:K` (K ≥ 1), `steps`", kTimingDoc),
        documented(size_key("c_elements", "values of the independent compute C (0 disables it)",
                            &Config::c_elements),
                   "0 to 2^32−1", kCDoc),
        documented(int_key("c_iterations", "iterations of the compute C per step",
                           &Config::c_iterations, 0),
                   "0 to 2^32−1", kCDoc),
        documented(real_key("alpha", "scale factor in the step formula", &Config::alpha, false),
                   "finite; with float32, 0 or of magnitude 1.17549e-38 to 3.40282e+38", kAlphaDoc),
        documented(seed_key(), "0 to 2^32−1", kSeedDoc),
        documented(choice_key("pairing", "which ranks exchange: neighbours or the two halves",
                              "adjacent|split", &Config::pairing,
                              std::array{Pairing::adjacent, Pairing::split}),
                   {}, kPairingDoc),
        documented(choice_key("pattern",
                              "what each step moves: a tensor per producer/consumer pair, a "
                              "broadcast from each group's rank 0, an all-reduce (sum) over "
                              "each group, or a relay through each group's ranks in turn",
                              "pairs|broadcast|allreduce|relay", &Config::pattern,
                              std::array{Pattern::pairs, Pattern::broadcast, Pattern::allreduce,
                                         Pattern::relay}),
                   {}, kPatternDoc),
        documented(int_key("group_size",
                           "ranks per group of a broadcast, all-reduce or relay, consecutive "
                           "ranks (0: the whole world; must divide it)",
                           &Config::group_size, 0),
                   "0, or a divisor of the world size (≤ 256 for an all-reduce, ≥ 2 for a relay)",
                   kGroupSizeDoc),
        documented(
            size_key("chunk", "bytes per staged MPI message piece (at least 4096)", &Config::chunk),
            "≥ 4096", kStagingDoc),
        documented(
            choice_key("staging",
                       "MPI through host staging buffers: auto (on the GPU path) or on "
                       "(also on the CPU path, to exercise the staging pipeline without a "
                       "GPU)",
                       "auto|on", &Config::staging, std::array{Staging::auto_select, Staging::on}),
            {}, kStagingDoc),
        documented(
            choice_key("ipc_engine",
                       "how transport = \"ipc\" moves a tensor: copy (the producer's copy "
                       "engine copies A's output into the consumer's slot) or sm (A itself "
                       "writes into the consumer's slot, on the producer's SMs: no copy)",
                       "copy|sm", &Config::ipc_engine, std::array{IpcEngine::copy, IpcEngine::sm}),
            {}, kIpcEngineDoc),
        may_differ_on_resume(documented(
            text_key("output",
                     "HDF5 result file (empty: a new outputs/gpurelay-DATE-TIME.h5 each run)",
                     "PATH", &Config::output),
            "a path in a folder that exists, or empty", kOutputDoc)),
        may_differ_on_resume(
            bool_key("overwrite", "replace an existing output file", &Config::overwrite)),
        may_differ_on_resume(documented(
            bool_key("resume",
                     "continue OUTPUT.partial, left by a run stopped with SIGTERM, SIGINT or "
                     "SIGUSR1, from the step where it stopped",
                     &Config::resume),
            {}, kResumeDoc)),
        documented(write_key(), "`all`, `last`, `none`, `every:K` (K ≥ 1)", kWriteDoc),
        documented(step_record_key(), "`auto`, `all`, `none`, `every:K`, `last:N` (K, N ≥ 1)",
                   kStepRecordDoc),
        documented(
            int_key("flush_every", "flush the file every K steps (0: only at creation and the end)",
                    &Config::flush_every, 0),
            "≥ 0", kFlushDoc),
        may_differ_on_resume(documented(text_key("summary_json", "JSON summary file (empty: none)",
                                                 "PATH", &Config::summary_json),
                                        "a path, or empty", kSideOutputsDoc)),
        may_differ_on_resume(documented(
            text_key("results_csv", "CSV timings file (empty: none)", "PATH", &Config::results_csv),
            "a path, or empty", kSideOutputsDoc)),
        documented(choice_key("host_wait",
                              "how a host thread waits for its peers and its GPU: prompt "
                              "(pauses of at most 50 us between looks), sparing (pauses that "
                              "grow to 1 ms in a long wait) or auto (prompt on the GPU path; on "
                              "the CPU path where every node has a core for each working thread)",
                              "auto|prompt|sparing", &Config::host_wait,
                              std::array{HostWaitMode::auto_select, HostWaitMode::prompt,
                                         HostWaitMode::sparing}),
                   {}, kHostWaitDoc),
        may_differ_on_resume(
            documented(real_key("timeout_s", "longest a rank waits on a peer, in seconds",
                                &Config::timeout_s, true),
                       "0.001 to 31536000 (a year)", kTimeoutDoc)),
        may_differ_on_resume(documented(bool_key("quiet",
                                                 "errors only: no progress, memory line or report "
                                                 "(the files and CSV row are still written)",
                                                 &Config::quiet),
                                        {}, kQuietDoc)),
        bool_key("debug_skip_reuse_wait", "tests only: drop the slot-reuse wait",
                 &Config::debug_skip_reuse_wait),
        int_key(
            "debug_delay_us",
            "tests only: microseconds each receive of debug_delay_rank starts late (a slow pair)",
            &Config::debug_delay_us, 0),
        int_key("debug_delay_rank", "tests only: the rank debug_delay_us slows",
                &Config::debug_delay_rank, 0),
        int_key("debug_stop_flush",
                "tests only: debug_stop_rank stops itself (SIGSTOP) just before the file's K-th "
                "periodic flush (0: never)",
                &Config::debug_stop_flush, 0),
        bool_key("debug_stop_close",
                 "tests only: debug_stop_rank stops itself (SIGSTOP) just before the file's close",
                 &Config::debug_stop_close),
        int_key("debug_stop_rank",
                "tests only: the rank debug_stop_flush or debug_stop_close stops",
                &Config::debug_stop_rank, 0),
        documented(text_key("tag", "free-text label stored with the results", "TEXT", &Config::tag),
                   "UTF-8 without control characters"),
        may_differ_on_resume(
            documented(profile_steps_key(), "`A:B` with 0 ≤ A ≤ B < steps, or empty", kProfileDoc)),
        documented(int_key("repeat",
                           "which launch of a configuration run several times this is "
                           "(scripts/sweep --repeat sets it): stored in the CSV, the JSON and "
                           "the file, it changes nothing in the run",
                           &Config::repeat, 0),
                   "≥ 0"),
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

std::string flag_of(std::string_view key) {
    std::string flag = "--" + std::string(key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
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
            return ec == std::errc() && end == text.data() + text.size() ? text : toml_quote(text);
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
