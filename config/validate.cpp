// The cross-key checks, run once every key is set (validate_config): one place that says which
// settings a run accepts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "config/config.hpp"
#include "config/transport_choice.hpp"
#include "config/value_text.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using config_detail::format_real;
using config_detail::kMax32;

// timeout_s: from a millisecond (the unit waits count in) to a year.
constexpr double kMinTimeoutSeconds = 0.001;
constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

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

// Refuses the run with `message` where `refused`: each check below says what it refuses.
void refuse_if(bool refused, const std::string& message) {
    if (refused) throw usage_error(message);
}

// "key (value)", as every message names the value it refuses.
template <typename T>
std::string given(std::string_view key, T value) {
    return std::string(key) + " (" + std::to_string(value) + ")";
}

// The counts of steps, slots and elements, and C's size.
void check_counts(const Config& c) {
    refuse_if(c.steps < 1, given("steps", c.steps) + " must be at least 1");
    refuse_if(c.warmup < 0, given("warmup", c.warmup) + " must not be negative");
    refuse_if(c.warmup >= c.steps, given("warmup", c.warmup) + " must be less than steps (" +
                                       std::to_string(c.steps) + "): no step would be timed");
    refuse_if(c.depth < 1 || c.depth > kMaxDepth,
              given("depth", c.depth) + " must be from 1 to " + std::to_string(kMaxDepth));
    // The kernels index with 32-bit unsigned integers.
    for (const std::uint64_t elements : c.size_list()) {
        refuse_if(elements < 1 || elements > kMax32,
                  given("elements", elements) +
                      " must be from 1 to 4294967295: kernels index with 32-bit integers");
    }
    refuse_if(c.c_elements > kMax32,
              given("c_elements", c.c_elements) +
                  " must be at most 4294967295 (0 disables C): kernels index with 32-bit integers");
    // Kernel C counts its iterations in 32 bits.
    refuse_if(c.c_iterations < 0 || c.c_iterations > 4294967295LL,
              given("c_iterations", c.c_iterations) + " must be from 0 to 4294967295");
}

// alpha, in the tensor's type.
void check_alpha(const Config& c) {
    const std::string alpha = "alpha (" + format_real(c.alpha) + ")";
    refuse_if(!std::isfinite(c.alpha), alpha + " must be finite");
    // B computes in the tensor's type: a float32 alpha must be a normal float32 (or 0), so it is
    // neither infinite nor flushed to 0 there; alpha x x then stays finite, as 0 <= x < 1.
    const double magnitude = std::fabs(c.alpha);
    refuse_if(c.dtype == DType::float32 && magnitude != 0 &&
                  (magnitude > std::numeric_limits<float>::max() ||
                   magnitude < std::numeric_limits<float>::min()),
              alpha +
                  " is outside float32's range: with dtype = \"float32\" its magnitude must be 0 "
                  "or from 1.17549e-38 to 3.40282e+38");
}

// The K of every:K and sampled:K, and the graphs' length against depth and what is written.
void check_modes(const Config& c) {
    refuse_if(c.write == WriteMode::every && c.write_every < 1,
              "write (every:" + std::to_string(c.write_every) + ") needs K of every:K >= 1");
    refuse_if(c.timing == Timing::sampled && c.timing_every < 1,
              "timing (sampled:" + std::to_string(c.timing_every) + ") needs K of sampled:K >= 1");
    const std::string graph_steps = given("graph_steps", c.graph_steps);
    refuse_if(c.graph_steps < 1, graph_steps + " must be at least 1");
    refuse_if(c.graph_steps > 1 && !c.graphs,
              graph_steps + " needs graphs = true: it says how many steps one graph holds");
    // Every graph then uses the slots in the same order, so one capture serves each launch.
    refuse_if(c.graph_steps > 1 && c.graph_steps % c.depth != 0,
              graph_steps + " must be 1 or a multiple of depth (" + std::to_string(c.depth) + ")");
    // Only the last step of a graph could be copied out before the graph overwrites it.
    refuse_if(c.graph_steps > 1 && c.write != WriteMode::last && c.write != WriteMode::none,
              graph_steps +
                  " needs write = \"last\" or \"none\": a graph of several steps reuses each y "
                  "slot before the writer could copy it out");
    refuse_if(c.flush_every < 0, given("flush_every", c.flush_every) + " must not be negative");
}

// The pattern's groups against pairing, group_size and graphs.
void check_pattern(const Config& c) {
    refuse_if(c.pattern == Pattern::pairs && c.group_size != 0,
              given("group_size", c.group_size) +
                  " is for pattern = \"broadcast\", \"allreduce\" or \"relay\"; pairs form no "
                  "groups");
    refuse_if(c.pattern == Pattern::relay && c.group_size == 1,
              "group_size = 1 makes a relay of 1 rank: a relay needs at least 2 stages");
    if (c.pattern == Pattern::pairs) return;
    const std::string pattern = "pattern = \"" + std::string(to_string(c.pattern)) + "\"";
    refuse_if(c.pairing == Pairing::split,
              pattern +
                  " forms groups of consecutive ranks (group_size); pairing = \"split\" is for "
                  "pattern = \"pairs\"");
    refuse_if(c.graphs && c.pattern != Pattern::relay,
              pattern + " runs eagerly: graphs = true is for pattern = \"pairs\" or \"relay\"");
}

// launch = "device": one launch of persistent kernels runs a pair's whole pass, which leaves no
// host step to capture, block on or time by events.
void check_launch(const Config& c) {
    const std::string blocks = given("device_blocks", c.device_blocks);
    refuse_if(c.device_blocks > kMaxDeviceBlocks,
              blocks + " must be at most " + std::to_string(kMaxDeviceBlocks));
    refuse_if(c.launch != Launch::device && c.device_blocks != 0,
              blocks + " needs launch = \"device\": it caps the blocks of its persistent kernels");
    if (c.launch != Launch::device) return;
    const std::string device =
        "launch = \"device\" runs each pass as one launch of persistent kernels, ";
    refuse_if(c.graphs,
              device + "with nothing for graphs = true to capture; use launch = \"host\"");
    refuse_if(c.blocking, device +
                              "so the host has no step to block on: blocking = true is for "
                              "launch = \"host\"");
    refuse_if(c.pattern != Pattern::pairs,
              device + "of one producer and one consumer: pattern = \"" +
                  std::string(to_string(c.pattern)) + "\" is for launch = \"host\"");
    refuse_if(c.timing == Timing::sampled || c.timing == Timing::steps,
              device + "which stamp every phase of every step on the device's clock: timing = \"" +
                  std::string(to_string(c.timing)) + "\" is for launch = \"host\"");
}

// duration, and what a run of no step limit can lay out in its file before it starts.
void check_duration(const Config& c) {
    const bool unlimited = c.steps == kNoStepLimit;
    refuse_if(unlimited && c.duration_s == 0,
              given("steps", c.steps) + " has no end without duration");
    if (c.duration_s == 0) return;
    const std::string duration = "duration (" + config_value_text(c, "duration") + ")";
    refuse_if(c.launch == Launch::device,
              duration +
                  " is for launch = \"host\": launch = \"device\" decides where its pass ends "
                  "on the device");
    refuse_if(c.write != WriteMode::last && c.write != WriteMode::none,
              duration + " needs write = \"last\" or \"none\": the rows of write = \"" +
                  config_value_text(c, "write") +
                  "\" are laid out before the run, and a run its duration ends would leave the "
                  "later ones unwritten");
    refuse_if(
        unlimited && (c.step_record == StepRecord::all || c.step_record == StepRecord::every),
        duration + " without steps has no step limit: step_record = \"" +
            config_value_text(c, "step_record") +
            "\" would keep a column per step of it; give steps, or keep auto, last:N or none");
}

// The texts that travel as TOML and land in the CSV and the report.
void check_texts(const Config& c) {
    for (const auto& [key, text] : {std::pair<const char*, const std::string&>{"output", c.output},
                                    {"summary_json", c.summary_json},
                                    {"results_csv", c.results_csv},
                                    {"tag", c.tag}}) {
        refuse_if(!is_utf8(text), std::string(key) + " is not valid UTF-8 text");
    }
    // The tag is one CSV field and one line of the report.
    refuse_if(
        std::any_of(c.tag.begin(), c.tag.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F; }),
        "tag must not hold control characters (a line break would split its CSV row)");
}

// A key that names a rank, where it acts (`used`): the rank must be one of the world's, or
// `effect` (what the key's partner would then do) silently never happens.
void check_rank_key(const char* key, std::int64_t rank, bool used, const char* effect,
                    int world_size) {
    refuse_if(used && rank >= world_size, given(key, rank) + " names no rank of this run's " +
                                              std::to_string(world_size) + " (0 to " +
                                              std::to_string(world_size - 1) + "): " + effect);
}

}  // namespace

void validate_for_world(const Config& c, int world_size) {
    // Each key is checked where it acts (the defaults name rank 0 and 1, also at -np 1).
    check_rank_key("debug_delay_rank", c.debug_delay_rank, c.debug_delay_us != 0,
                   "debug_delay_us would slow no receive", world_size);
    check_rank_key("debug_stop_rank", c.debug_stop_rank,
                   c.debug_stop_flush != 0 || c.debug_stop_close,
                   c.debug_stop_close ? "debug_stop_close would stop no rank"
                                      : "debug_stop_flush would stop no rank",
                   world_size);
}

void validate_config(const Config& c) {
    check_counts(c);
    check_alpha(c);
    refuse_if(c.chunk < 4096, given("chunk", c.chunk) + " must be at least 4096 bytes");
    check_modes(c);
    check_duration(c);
    // Waits count milliseconds: below 1 ms a timeout would be 0, and above a year it means none
    // (and far above, the count overflows).
    refuse_if(!(c.timeout_s >= kMinTimeoutSeconds && c.timeout_s <= kMaxTimeoutSeconds),
              "timeout_s (" + format_real(c.timeout_s) + ") must be between " +
                  format_real(kMinTimeoutSeconds) + " and " + format_real(kMaxTimeoutSeconds) +
                  " seconds");
    // Before the transports: what a device-driven pass cannot be, whichever transport runs it.
    check_launch(c);
    // What the transport table refuses from the deck alone; what auto picks is checked again
    // where the ranks know their path, nodes and GPUs (set-up).
    choose_transport(c, facts_from_config(c));
    check_pattern(c);
    check_texts(c);
    refuse_if(
        (c.profile_first != -1 || c.profile_last != -1) &&
            (c.profile_first < 0 || c.profile_first > c.profile_last || c.profile_last >= c.steps),
        "profile_steps (" + std::to_string(c.profile_first) + ":" + std::to_string(c.profile_last) +
            ") must satisfy 0 <= A <= B < steps (" + std::to_string(c.steps) + ")");
}

}  // namespace gpurelay
