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
enum class Pattern { pairs, broadcast, allreduce, relay };
enum class Staging { auto_select, on };
enum class IpcEngine { copy, sm };
// How host threads wait (runtime/poll.hpp; auto: host_wait_for).
enum class HostWaitMode { auto_select, prompt, sparing };
enum class WriteMode { all, last, none, every };
// auto: every step up to kAutoRecordSteps, the last kAutoRecordSteps beyond.
enum class StepRecord { auto_select, all, every, last, none };
inline constexpr std::int64_t kAutoRecordSteps = 10'000;
// `steps` of a run with a duration and no steps: no limit in practice (31 years of 1 us steps).
inline constexpr std::int64_t kNoStepLimit = 1'000'000'000'000'000;
enum class Timing { auto_select, phases, sampled, steps };
// timing = auto: sampled:kTimingAutoEvery where warm-up steps take under kTimingAutoBelowMs (a
// phase-timed step costs the host ~9 more event records, which so short a step cannot hide).
inline constexpr double kTimingAutoBelowMs = 0.25;
inline constexpr std::int64_t kTimingAutoEvery = 16;

inline constexpr std::int64_t kMaxDepth = 64;

enum class Launch { host, device };
inline constexpr std::int64_t kMaxDeviceBlocks = 4096;

// transport = "auto": the first row of the transports' table that suits (transport_choice.hpp).
inline constexpr std::string_view kAutoTransport = "auto";

// The keys the pipeline takes whole (pipeline_spec); each field is the key of its name.
struct PipelineKeys {
    DType dtype = DType::float32;
    std::uint64_t elements = 1ull << 20;  // of a run of several sizes: the first's
    std::int64_t steps = 20;
    std::int64_t warmup = 2;  // step 0 is the cold step
    std::int64_t depth = 2;
    bool blocking = false;
    bool graphs = false;
    std::int64_t graph_steps = 1;
    Launch launch = Launch::host;
    std::int64_t device_blocks = 0;
    Timing timing = Timing::auto_select;
    std::int64_t timing_every = 0;  // K of timing = "sampled:K"
    std::uint64_t c_elements = 1ull << 20;
    // Light (a few ms a step on a CPU core), so that a first run ends in seconds.
    std::int64_t c_iterations = 8;
    double alpha = 2.0;
    std::uint32_t seed = 12345;
    WriteMode write = WriteMode::last;
    std::int64_t write_every = 0;  // K of write = "every:K"
    StepRecord step_record = StepRecord::auto_select;
    std::int64_t step_record_count = 0;  // K of every:K, N of last:N
    double timeout_s = std::chrono::duration<double>(kDefaultTimeout).count();
    std::int64_t profile_first = -1;  // profile_steps = "A:B" (-1: no capture range)
    std::int64_t profile_last = -1;

    bool operator==(const PipelineKeys&) const = default;

    std::uint64_t tensor_bytes() const;
    // timeout_s as a duration, for every wait that honours it (validate_config bounds it).
    std::chrono::milliseconds timeout() const {
        return std::chrono::milliseconds(static_cast<long long>(std::llround(timeout_s * 1000)));
    }
    bool profiles() const { return profile_first >= 0; }
    std::int64_t timed_steps() const { return steps - warmup; }
    // Whether step s (0-based) is kept in /y.
    bool writes_step(std::int64_t step) const;
    // The steps kept in /y, in order.
    std::vector<std::int64_t> written_steps() const;
    std::int64_t written_rows() const;  // written_steps().size(), without making it
    // step_record resolved (auto becomes all or last:kAutoRecordSteps), its K or N, and the
    // columns of /timings: the steps it keeps at most.
    struct Recorded {
        StepRecord mode;
        std::int64_t count, columns;
    };
    Recorded recorded() const;
};

// One run's settings (the pipeline's own in PipelineKeys); each field is the key of its name.
struct Config : PipelineKeys {
    DeviceKind device = DeviceKind::auto_select;
    std::string transport{kAutoTransport};
    // The key elements as a list or a range: each size in turn, in one launch. Empty: `elements`.
    std::vector<std::uint64_t> sizes;
    OverlapMode overlap = OverlapMode::compare;
    bool calibrate = true;
    Pairing pairing = Pairing::adjacent;
    Pattern pattern = Pattern::pairs;
    std::int64_t group_size = 0;
    std::uint64_t chunk = 4ull << 20;
    Staging staging = Staging::auto_select;
    IpcEngine ipc_engine = IpcEngine::copy;
    std::string output;
    bool overwrite = false;
    bool resume = false;
    std::int64_t flush_every = 0;
    std::string summary_json;
    std::string results_csv;
    HostWaitMode host_wait = HostWaitMode::auto_select;
    bool quiet = false;
    bool debug_skip_reuse_wait = false;
    std::int64_t debug_delay_us = 0;
    std::int64_t debug_delay_rank = 0;
    std::int64_t debug_stop_flush = 0;
    bool debug_stop_close = false;
    std::int64_t debug_stop_rank = 1;
    double duration_s = 0;  // the key duration
    std::string tag;
    std::int64_t repeat = 0;

    bool operator==(const Config&) const = default;

    // The run's tensor sizes in order: `sizes`, or `elements` alone.
    std::vector<std::uint64_t> size_list() const;
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
    // change a result (where the outputs go, how long to wait, what is printed).
    bool may_differ_on_resume = false;
};
const std::vector<ConfigKey>& config_keys();

// docs/CONFIG.md: every key's type, default, range and meaning in a table, then the details.
std::string config_doc_markdown();

// The flag of a key: key foo_bar is --foo-bar.
std::string flag_of(std::string_view key);

// Sets one key from its text form (a deck value or a flag's argument); a usage error names the
// value as `label` (e.g. "--c-elements"), by default the key.
void set_config_value(Config& config, std::string_view key, std::string_view value,
                      std::string_view label = {});
// The value of one key as plain text, the form a flag takes (strings unquoted).
std::string config_value_text(const Config& config, std::string_view key);
// The value of one key as TOML literal text (strings quoted).
std::string config_value_toml(const Config& config, std::string_view key);

// Cross-key checks run once everything is set; throws a usage error naming the keys.
void validate_config(const Config& config);
// The checks that need the world's size (the keys that name a rank); a usage error naming the key.
void validate_for_world(const Config& config, int world_size);

// The resolved deck as TOML that, read back, gives the same Config.
std::string config_to_toml(const Config& config);
// Reads a deck from TOML text on top of `base`; `origin` names the source in errors.
Config config_from_toml(std::string_view toml_text, std::string_view origin, Config base = {});

// "64Mi", "1G", "4096", "1e9" (exponent form: a whole number) as a count; errors name `key`.
std::uint64_t parse_size(std::string_view key, std::string_view text);
inline constexpr std::size_t kMaxSizes = 64;  // sizes in one run, at most
// Parses one size, a list "4Ki,64Ki,1Mi", or a range "4Ki:256Mi:x4" (geometric, a factor >= 2) or
// "1Ki:8Ki:+1Ki" (arithmetic), into the sizes in order; a usage error naming `key` for an empty
// list or item, a range that does not grow, more than kMaxSizes sizes or a size given twice.
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

// Numbers as "a,b,c" (appended piece by piece: GCC 12 warns falsely on "," + a temporary).
template <typename Numbers>
std::string comma_list(const Numbers& numbers) {
    std::string text;
    for (const auto n : numbers) (text += text.empty() ? "" : ",") += std::to_string(n);
    return text;
}

// f.template operator()<T>() with T the element type of `dtype` (float or double): the one place
// a dtype becomes a C++ type, as in with_dtype(dtype, [&]<typename T>() { return run<T>(); }).
template <typename F>
decltype(auto) with_dtype(DType dtype, F&& f) {
    if (dtype == DType::float32) return f.template operator()<float>();
    return f.template operator()<double>();
}

}  // namespace gpurelay
