// The typed run configuration: every input-deck key, its default, parsing and validation.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/timeout.hpp"

namespace gpurelay {

// Each enumeration's names (to_string) are a list in its values' order (config/enum_names.cpp).
enum class DeviceKind { auto_select, cuda, cpu };
enum class DType { float32, float64 };
enum class OverlapMode { on, off, compare };
enum class Pairing { adjacent, split };
// What a step moves: a tensor per producer/consumer pair, a broadcast from each group's rank 0, or
// an all-reduce (sum) over each group.
enum class Pattern { pairs, broadcast, allreduce, relay };
enum class Staging { auto_select, on };
enum class IpcEngine { copy, sm };
// How host threads wait (runtime/poll.hpp): auto picks prompt on the GPU path, and on the CPU
// path where every node has a core for each working thread; sparing elsewhere.
enum class HostWaitMode { auto_select, prompt, sparing };
enum class WriteMode { all, last, none, every };
// Which steps' times and wrong-element counts the file keeps (/timings, /verification): every
// step, every K-th (every:K, steps K-1, 2K-1, ... as write's), the last N (last:N), none, or auto:
// every step up to kAutoRecordSteps, the last kAutoRecordSteps beyond. The histograms of every
// timed step are kept whatever it says.
enum class StepRecord { auto_select, all, every, last, none };
inline constexpr std::int64_t kAutoRecordSteps = 10'000;
// `steps` when a run has a duration and no steps of its own: no limit in practice (31 years of
// 1 us steps).
inline constexpr std::int64_t kNoStepLimit = 1'000'000'000'000'000;
// Which steps record the events that time each phase: every step, every K-th (sampled:K), none
// (steps: one event per step times its period), or auto (decided from the warm-up steps).
enum class Timing { auto_select, phases, sampled, steps };
// What auto does: sampled:kTimingAutoEvery in a pass whose warm-up steps took less than
// kTimingAutoBelowMs each (a phase-timed step costs the host ~9 more event records, which so short
// a step cannot hide), phases otherwise.
inline constexpr double kTimingAutoBelowMs = 0.25;
inline constexpr std::int64_t kTimingAutoEvery = 16;

// The most slots a ring holds (depth).
inline constexpr std::int64_t kMaxDepth = 64;

// Who queues each step: the host (its launches, eager or as CUDA graphs) or the device (one
// persistent kernel per role runs every step of a pass, handing tensors over through the ipc
// slots' sequence words; a host thread per role on the CPU path).
enum class Launch { host, device };
// The most blocks (threads, on the CPU path) device_blocks may give each role's persistent kernel.
inline constexpr std::int64_t kMaxDeviceBlocks = 4096;

// transport = "auto": the first of the transports' table whose needs the run meets
// (config/transport_choice.hpp).
inline constexpr std::string_view kAutoTransport = "auto";

// The keys the pipeline takes as the deck gives them: Config holds them, and PipelineSpec takes
// them whole (pipeline_spec), so a key the pipeline reads is declared here, and given its line of
// the key table, with no copy of its own on the way.
struct PipelineKeys {
    DType dtype = DType::float32;
    std::uint64_t elements = 1ull << 20;  // per tensor (of a run of several sizes: the first's)
    std::int64_t steps = 20;              // total steps, warm-up included
    std::int64_t warmup = 2;  // first steps left out of the timings (step 0 is the cold step)
    std::int64_t depth = 2;   // slots in the ring
    bool blocking = false;
    bool graphs = false;           // replay each steady-state step as CUDA graphs (CUDA path)
    std::int64_t graph_steps = 1;  // graphs = true: consecutive steps per graph (1 or k * depth)
    Launch launch = Launch::host;
    // launch = "device": the most blocks of each role's persistent kernel (0: one per SM; on the
    // CPU path a thread each, and 0 means one).
    std::int64_t device_blocks = 0;
    Timing timing = Timing::auto_select;
    std::int64_t timing_every = 0;  // K of timing = "sampled:K"
    std::uint64_t c_elements = 1ull << 20;
    // C's default is light (1 Mi x 8 takes a few ms a step on a CPU core, a fraction of a µs of
    // an H200's SMs): a first run finishes in seconds; studies size C to the transfer.
    std::int64_t c_iterations = 8;
    double alpha = 2.0;
    std::uint32_t seed = 12345;
    WriteMode write = WriteMode::last;
    std::int64_t write_every = 0;  // K of write = "every:K"
    StepRecord step_record = StepRecord::auto_select;
    std::int64_t step_record_count = 0;  // K of every:K, N of last:N
    // Longest a rank waits on a peer before giving up.
    double timeout_s = std::chrono::duration<double>(kDefaultTimeout).count();
    // profile_steps = "A:B": the profiler capture range covers steps A to B (-1: no range).
    std::int64_t profile_first = -1;
    std::int64_t profile_last = -1;

    bool operator==(const PipelineKeys&) const = default;

    // Bytes of one tensor of `elements` values of `dtype`.
    std::uint64_t tensor_bytes() const;
    // timeout_s as a duration, for every wait that honours it.
    // (validate_config keeps timeout_s within [kMinTimeoutSeconds, kMaxTimeoutSeconds].)
    std::chrono::milliseconds timeout() const {
        return std::chrono::milliseconds(static_cast<long long>(std::llround(timeout_s * 1000)));
    }
    // Whether profile_steps asks for a profiler capture range.
    bool profiles() const { return profile_first >= 0; }
    // Steps that count in the timings.
    std::int64_t timed_steps() const { return steps - warmup; }
    // Whether step s (0-based) is kept in /y.
    bool writes_step(std::int64_t step) const;
    // The steps kept in /y, in order.
    std::vector<std::int64_t> written_steps() const;
    // How many steps are kept in /y (the size of written_steps(), without making it).
    std::int64_t written_rows() const;
    // step_record resolved (auto becomes all or last:kAutoRecordSteps), its K or N, and the
    // columns of /timings: the steps it keeps at most.
    struct Recorded {
        StepRecord mode;
        std::int64_t count, columns;
    };
    Recorded recorded() const;
};

// One run's settings (the pipeline's own in PipelineKeys). Field names are the deck keys; each is
// also the flag --key-name.
struct Config : PipelineKeys {
    DeviceKind device = DeviceKind::auto_select;
    // "auto", or a transport of the transports' table (transport/transport_table.cpp).
    std::string transport{kAutoTransport};
    // A run of several tensor sizes (the key elements as a list or a range): each in turn, in this
    // order, in one launch. Empty: the one size `elements`.
    std::vector<std::uint64_t> sizes;
    OverlapMode overlap = OverlapMode::compare;
    bool calibrate = true;  // measure the phases' ceilings before the timed steps
    Pairing pairing = Pairing::adjacent;
    Pattern pattern = Pattern::pairs;
    std::int64_t group_size = 0;       // ranks per group of a collective or a relay (0: the world)
    std::uint64_t chunk = 4ull << 20;  // bytes per staged MPI message piece
    Staging staging = Staging::auto_select;  // MPI through pinned staging: on the GPU, or always
    IpcEngine ipc_engine = IpcEngine::copy;  // ipc: a copy of A's output, or A writes in place
    // Empty: a new file per run, outputs/gpurelay-DATE-TIME.h5 (io/output_path.hpp).
    std::string output;
    bool overwrite = false;
    bool resume = false;  // continue OUTPUT.partial from the step where it stopped
    std::int64_t flush_every =
        0;                     // flush the file every K steps of the last pass (0: only at the end)
    std::string summary_json;  // empty: none
    std::string results_csv;   // empty: none
    HostWaitMode host_wait = HostWaitMode::auto_select;
    bool quiet = false;
    bool debug_skip_reuse_wait = false;  // tests only: drop the slot-reuse wait to show it matters
    // Tests only: each receive of rank debug_delay_rank starts debug_delay_us late (a slow pair).
    std::int64_t debug_delay_us = 0;
    std::int64_t debug_delay_rank = 0;
    // Tests only: rank debug_stop_rank raises SIGSTOP on itself just before the file's
    // debug_stop_flush-th periodic flush (0: none) or, with debug_stop_close, just before its
    // close, so a test stops a peer inside a collective HDF5 call without guessing at timing.
    std::int64_t debug_stop_flush = 0;
    bool debug_stop_close = false;
    std::int64_t debug_stop_rank = 1;
    // Run steps until this wall time (seconds from the launch's start; 0: no limit), each pass
    // until its share: pass k of the P this launch runs ends once (k + 1) / P of it has passed,
    // or at `steps`, whichever comes first.
    double duration_s = 0;
    std::string tag;  // free-text label stored with the results
    // Which launch of a configuration run several times this is (scripts/sweep --repeat):
    // stored with the results, it changes nothing in the run.
    std::int64_t repeat = 0;

    bool operator==(const Config&) const = default;

    // The run's tensor sizes in order: `sizes`, or `elements` alone.
    std::vector<std::uint64_t> size_list() const;
    // Whether the run has several sizes.
    bool several_sizes() const { return sizes.size() > 1; }
    // This run for one size: elements = `size_elements`, no other sizes.
    Config sized(std::uint64_t size_elements) const;
    // The largest of the run's sizes: what every buffer is made for.
    Config largest() const;
};

// Description of one key, for --help, --print-config, the did-you-mean hint and docs/CONFIG.md;
// help, range and details are config/keys.md's words.
struct ConfigKey {
    std::string_view name = {};
    std::string_view help = {};        // one sentence: --help's line and CONFIG.md's meaning
    std::string_view value_hint = {};  // what the value looks like, e.g. "SIZE" or "on|off|compare"
    bool is_bool = false;              // a bare --flag means true
    std::string_view type = {};     // the kind of value in words: "integer", "size", "choice", ...
    std::string_view range = {};    // the values the run accepts, in words (CONFIG.md)
    std::string_view details = {};  // CONFIG.md's paragraph on the key, or empty
    // Whether --resume may continue a file started with another value: only for what cannot
    // change a result (where the outputs go, how long to wait, what is printed). A key that does
    // not say so must match the stored deck.
    bool may_differ_on_resume = false;
};
const std::vector<ConfigKey>& config_keys();

// docs/CONFIG.md: every key's type, default, range and meaning as one Markdown table, then a
// paragraph per key that has one. The test config.doc_current compares the committed file.
std::string config_doc_markdown();

// The flag of a key: key foo_bar is --foo-bar.
std::string flag_of(std::string_view key);

// Sets one key from its text form (a deck value or a flag's argument); throws a usage error.
void set_config_value(Config& config, std::string_view key, std::string_view value);
// As above, but errors name the value as `label` (e.g. "--c-elements") instead of the key.
void set_config_value(Config& config, std::string_view key, std::string_view value,
                      std::string_view label);
// The value of one key as plain text, the form a flag takes (strings unquoted).
std::string config_value_text(const Config& config, std::string_view key);
// The value of one key as TOML literal text (strings quoted).
std::string config_value_toml(const Config& config, std::string_view key);

// Cross-key checks run once everything is set; throws a usage error naming the keys.
void validate_config(const Config& config);
// The checks that need the world's size, once it is known (the keys that name a rank); throws a
// usage error naming the key.
void validate_for_world(const Config& config, int world_size);

// The resolved deck as TOML that, read back, gives the same Config.
std::string config_to_toml(const Config& config);
// Reads a deck from TOML text on top of `base`; `origin` names the source in errors.
Config config_from_toml(std::string_view toml_text, std::string_view origin, Config base = {});

// Parses "64Mi", "1G", "4096", "1e9" (exponent form: only a whole number) into a count; throws a
// usage error naming `key`.
std::uint64_t parse_size(std::string_view key, std::string_view text);
// At most this many sizes in one run.
inline constexpr std::size_t kMaxSizes = 64;
// Parses one size, a list "4Ki,64Ki,1Mi", or a range "4Ki:256Mi:x4" (geometric, an integer factor
// of at least 2) or "1Ki:8Ki:+1Ki" (arithmetic), into the sizes in order; throws a usage error
// naming `key` for an empty list or item, a range that does not grow, more than kMaxSizes sizes
// or a size given twice.
std::vector<std::uint64_t> parse_size_list(std::string_view key, std::string_view text);
// The closest known key to `unknown`, or empty when nothing is close.
std::string closest_key(std::string_view unknown);
// The candidate nearest to `unknown` (edit distance at most max(2, length/3)), or empty.
std::string closest_name(std::string_view unknown, const std::vector<std::string_view>& candidates);

std::string_view to_string(DeviceKind v);
std::string_view to_string(DType v);
std::string_view to_string(OverlapMode v);
std::string_view to_string(Pairing v);
std::string_view to_string(Pattern v);
std::string_view to_string(Staging v);
std::string_view to_string(IpcEngine v);
std::string_view to_string(Launch v);
std::string_view to_string(HostWaitMode v);
std::string_view to_string(WriteMode v);   // "every" without its K; see config_value_text
std::string_view to_string(StepRecord v);  // "every" and "last" without their count
std::string_view to_string(Timing v);      // "sampled" without its K
std::size_t dtype_size(DType v);

// Calls `f.template operator()<T>()` with T the element type of `dtype` (float or double) and
// returns what it returns: the one place a dtype becomes a C++ type, e.g.
//   with_dtype(config.dtype, [&]<typename T>() { return run<T>(); });
template <typename F>
decltype(auto) with_dtype(DType dtype, F&& f) {
    if (dtype == DType::float32) return f.template operator()<float>();
    return f.template operator()<double>();
}

}  // namespace gpurelay
