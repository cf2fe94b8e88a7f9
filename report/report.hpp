// Combining every rank's measurements into one summary, and presenting it: the report on rank 0,
// the JSON summary and the results CSV row.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "mpi/pairing.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/step_bound.hpp"

namespace gpurelay {

// A phase's distribution over every rank's timed steps (NaN steps left out). Percentiles
// interpolate linearly between the order statistics, as numpy.percentile's default does, each
// read from the pass's histograms within 0.5% (so a reader can check them against the file's
// /histograms, and within 0.5% against /timings where it keeps every step); cv is the coefficient
// of variation, the population standard deviation over the mean.
struct PhaseStats {
    double median, min, max;
    double p50, p90, p99, cv;
};

// Steps whose period took more than kSlowStepFactor times the median period: how many on the
// rank that counted most (from its histogram, to its buckets' 0.5%; at least as many as it
// names), and the first kSlowStepsKept of their numbers among every rank's 64 slowest steps (to
// find them on a profile's timeline).
inline constexpr double kSlowStepFactor = 3.0;
inline constexpr std::size_t kSlowStepsKept = 8;

struct PairFigures {
    int pair, producer, consumer;
    double step_ms;      // median step period on the consumer
    double transfer_ms;  // median transfer time
    double transfer_gbps;
    // More than kSlowPairMargin slower than the median pair, in step time or in transfer time.
    bool slow = false;
};
inline constexpr double kSlowPairMargin = 0.10;

// A relay's stage, over the pass's timed steps on its rank: the period and the phases' medians
// (NaN where the stage has no such phase), and the wrong elements it counted.
struct StageFigures {
    int group = 0, stage = 0, rank = 0;
    double step_ms = 0, a_ms = 0, recv_ms = 0, c_ms = 0, wait_ms = 0, b_ms = 0, send_ms = 0;
    std::uint64_t x_mismatches = 0, c_mismatches = 0;
    // The host's time per timed step (µs), as the pass's "host per step" line, for this stage.
    double host_queue_us = 0, host_retire_us = 0, host_callback_us = 0;
};
// A relay's stages, and its fill latency: the slowest group's time from the timed steps' start
// (every rank idle past a barrier) until its last stage's B of the first timed step is done.
struct RelayFigures {
    int stages = 0;                           // per group
    std::vector<StageFigures> stage_figures;  // every rank, in rank order
    double fill_ms = std::numeric_limits<double>::quiet_NaN();
};

// A pass as the report and the progress line name it: "overlap=on" or "overlap=off".
inline const char* pass_name(bool overlap) { return overlap ? "overlap=on" : "overlap=off"; }

struct PassSummary {
    bool overlap = true;
    std::int64_t timed_steps = 0, timed_from = 0;
    std::array<PhaseStats, kPhaseCount> phases{};  // over every rank's timed steps, as kPhases
    const PhaseStats& phase(Phase p) const { return phases[index_of(p)]; }
    // What `phases` are read from: every rank's histograms summed (rank 0; empty elsewhere).
    std::array<LogHistogram, kPhaseCount> histograms{};
    double transfer_ms = 0, transfer_gbps = 0, aggregate_gbps = 0;
    // nccl-tests' bus bandwidth: transfer_gbps (its algorithm bandwidth, bytes / time) times
    // bus_factor(); for pairs and broadcast the same.
    double bus_gbps = 0;
    double a_gbps = 0, b_gbps = 0, c_giter_per_s = 0;
    double time_per_step_ms = 0, steps_per_s = 0, cold_step_ms = 0, write_wait_ms = 0;
    double step_bound_ms = 0;  // the step model: the time per step these phase medians give
    std::uint64_t x_checked = 0, x_mismatches = 0, c_checked = 0, c_mismatches = 0;
    std::uint64_t spot_checked = 0, spot_mismatches = 0;
    // graphs = true: CUDA graphs captured and the host time that took (the largest on any rank),
    // and the steps run as graph launches.
    int graphs_captured = 0;
    // Host time per timed step (µs) on the rank where it is longest: queueing, reading back
    // (waiting for the GPU), the per-step callback. See PassResult.
    double host_queue_us = 0, host_retire_us = 0, host_callback_us = 0;
    double capture_ms = 0;
    std::int64_t graph_steps = 0;
    // The timing the pass used ("sampled:16"), whether auto chose it and from what (the slowest
    // rank's time per warm-up step, NaN when it had none), and the timed steps that carry phase
    // times (alike on every rank).
    std::string timing;
    bool timing_auto = false;
    double timing_judged_ms = 0;
    std::int64_t phase_timed_steps = 0;
    // Timed steps that share their end event with others (each gets its retire group's period
    // over its steps), and the most steps one end event retires.
    std::int64_t grouped_steps = 0, retire_group_steps = 1;
    std::vector<PairFigures> pairs;               // a relay: one per hop
    std::optional<RelayFigures> relay;            // pattern = "relay" only
    std::int64_t slow_steps = 0;                  // see kSlowStepFactor
    std::vector<std::int64_t> slow_step_numbers;  // the first kSlowStepsKept of them
    // The GPU's SM clock over the timed steps (NVML; the CUDA path): the slowest rank's where
    // they start and where they end, the highest maximum, and every slowdown reason any rank's
    // GPU gave at either sample (NVML's bit mask). NaN and 0 where no rank measured them.
    bool clocks_measured = false;
    double sm_clock_start_mhz = std::numeric_limits<double>::quiet_NaN();
    double sm_clock_end_mhz = std::numeric_limits<double>::quiet_NaN();
    double sm_clock_max_mhz = std::numeric_limits<double>::quiet_NaN();
    std::uint64_t clock_reasons = 0;
    bool verified() const { return x_mismatches == 0 && c_mismatches == 0 && spot_mismatches == 0; }
};

// Verification counts summed over a run's passes.
struct VerificationTotals {
    std::uint64_t x_checked = 0, x_mismatches = 0, c_checked = 0, c_mismatches = 0;
    std::uint64_t spot_checked = 0, spot_mismatches = 0;
};

struct RankInfo {
    std::string host, device, bus_id, role;
    std::string peer_link;  // how this rank's GPU reaches its peer's
    int pair = 0;
    // Where it may run (runtime/placement.hpp): its allowed cores ("0-7,16"), their NUMA nodes,
    // its GPU's NUMA node ("" where unknown or on the CPU path), how many cores it may use, and
    // on the CPU path the threads it runs work on (its host streams and its main thread).
    std::string cores, core_numa, gpu_numa;
    int core_count = 0, host_threads = 0;
};

// The phases' ceilings, measured alone in the same launch (calibrate = true), in ms: the bare
// transfer (the same transport, slots and streams, no A, B or C), a device copy of the tensor on
// the producer and on the consumer (A's and B's ceiling), and C alone; and what measuring them
// took.
struct Ceilings {
    bool measured = false;
    double transfer_ms = 0, a_copy_ms = 0, b_copy_ms = 0, c_ms = 0, cost_ms = 0;
    std::vector<double> hop_transfer_ms;  // a relay's: each hop's bare transfer (rank 0)
};
// A pass's phases as fractions of their ceilings' speed (1: at the ceiling; NaN: not measured).
struct CeilingRatios {
    double transfer, a, b, c;
};

struct RunSummary {
    Config config;
    std::string backend;                      // "cuda" or "cpu"
    std::string transport;                    // as the transport names itself
    std::string transport_note;               // why auto chose it, when it had to choose
    std::string host_wait, host_wait_reason;  // the policy of the hosts' waits, and why
    int world_size = 1, pairs = 1;
    int groups = 0, group_size = 0;  // a collective pattern's groups (0 for pairs)
    std::vector<RankInfo> ranks;
    std::vector<PassSummary> passes;  // in run order
    Ceilings ceilings;
    double overlap_speedup = 0;  // compare only: time per step off / on (0 otherwise)
    // Compare only: the time per step perfect overlap would give, the overlapped step model
    // from the overlap=off pass's phases (measured without the two streams contending).
    double overlap_ideal_ms = 0;
    // The largest rank's: on the device (the host, on the CPU path), in pinned host memory (the
    // writer's buffers and the counters), and of both together.
    std::uint64_t device_bytes = 0, host_bytes = 0, total_bytes = 0;
    double write_gbps = 0;
    // The result file once complete (at most: its room for metadata), checked to fit at start.
    double output_bytes = 0;
    std::string versions;  // "gpurelay 0.1.0 (git) CUDA ... NCCL ... MPI ... HDF5 ..."
    std::string timestamp, git_hash;
    // A resumed run: the step, pass (its index in run order) and size this launch starts from; -1
    // when the run was not resumed.
    std::int64_t resumed_step = -1, resumed_pass = 0, resumed_size = 0;

    bool verified() const;
    VerificationTotals verification_totals() const;
    // Whether the writing pass of a compare run waited on the file writer (the off pass never
    // writes), which makes the speedup include I/O.
    bool speedup_includes_io() const {
        return overlap_speedup > 0 && passes.back().write_wait_ms > 0.0;
    }
    const PassSummary& main_pass() const { return passes.back(); }
};

// --- Relays (report/relay_figures.cpp) ----------------------------------------------------------
// Collective: every rank's stage figures and the slowest group's fill latency, on every rank.
RelayFigures summarize_relay(MPI_Comm comm, const PairPlacement& placement,
                             const PassResult& result);
// The hop (index into pass.pairs) whose transfer takes longest; -1 without hops.
int slowest_hop(const PassSummary& pass);
// That hop's median transfer in ms; NaN without hops.
double slowest_hop_ms(const PassSummary& pass);
// The relay's period (the pass's time per step) over that transfer; NaN without hops.
double period_over_slowest_hop(const PassSummary& pass);
// The relay's headline: the period, the slowest hop named by its stages (the period over its
// transfer where the phase times are `readable`), the fill latency.
void print_relay(std::FILE* out, const PassSummary& pass, bool readable);
// Each hop against its own ceiling (when measured and the phase times are `readable`) and each
// stage, one a line up to kLinksListed, else the slowest.
void print_relay_stages(std::FILE* out, const RunSummary& summary, const PassSummary& pass,
                        bool readable);
// The relay's figures as the JSON and the file's pass attributes carry them (JSON text: the
// report library keeps nlohmann-json private).
std::string relay_json(const PassSummary& pass);
// Collective: rank 0's `text` on every rank (the figures the file's attributes carry are rank
// 0's, and every rank writes the same attributes).
std::string text_from_root(MPI_Comm comm, std::string text);

// The distribution of `values` (NaN left out; all NaN without any), as PhaseStats says.
PhaseStats phase_stats(std::vector<double> values);
// The same, read from a histogram: each order statistic within its relative error, the least,
// the largest and cv exact.
PhaseStats phase_stats(const LogHistogram& histogram);

// nccl-tests' bus bandwidth factor, what each rank's link carries per byte of the tensor:
// point-to-point and broadcast 1, all-reduce 2(n-1)/n for a group of n.
double bus_factor(Pattern pattern, int group_size);

// The medians step_bound_ms() takes, from a pass's phases.
PhaseMedians phase_medians(const PassSummary& pass);

// Collective over `comm`: every rank's histograms summed and its figures reduced (nothing that
// grows with the steps travels). The whole summary is valid on rank 0; the verification totals
// on every rank (so all agree on the exit code).
PassSummary summarize_pass(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                           const PassResult& result);

// Collective: the ceilings Pipeline::ceilings() measured on each rank, reduced as a pass is
// (valid on rank 0); not measured when any rank measured none.
Ceilings summarize_ceilings(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                            const PassResult& measured);
CeilingRatios against_ceilings(const PassSummary& pass, const Ceilings& ceilings);
// A compare run's overlapped step, split (in ms) into perfect overlap (the step model of the
// overlap=off medians with the transfer and C at their ceilings), C's slowdown beside the transfer
// (C's median with overlap less C alone), the transfer's slowdown beside C, A and B (its median
// with overlap less the bare transfer), and the rest (ordering, launches, the host): the four add
// up to the measured time per step. Not measured without the ceilings or without compare.
// `explains` is false where the terms cannot be an explanation (see kAttributionRestShare):
// `why_not` then says what they fail to explain.
struct OverlapAttribution {
    bool measured = false;
    double step_ms = 0, perfect_ms = 0, c_slowdown_ms = 0, transfer_slowdown_ms = 0, rest_ms = 0;
    bool explains = false;
    std::string why_not;
};
// An attribution explains the step only when "the rest" is at most this share of it, no term is
// negative by more than that share (a phase faster beside the others than alone is a phase time
// that measured waiting, and two such terms cancel), and the step does not beat perfect overlap
// by kModelBeatenFactor or more.
inline constexpr double kAttributionRestShare = 0.25;
// A model of the step (the step model, perfect overlap) that the measured step beats by this
// factor or more is not an explanation of it: its phase times measured something else.
inline constexpr double kModelBeatenFactor = 2.0;
OverlapAttribution attribute_overlap(const RunSummary& summary);
void print_overlap_attribution(std::FILE* out, const RunSummary& summary);
// The report's line for `pass` against the ceilings (nothing when none were measured).
void print_ceilings(std::FILE* out, const RunSummary& summary, const PassSummary& pass);

// Where the figures measure waiting rather than work, and why (report/trust.cpp).
// A host whose ranks run more threads than they have cores (the CPU path only).
struct HostLoad {
    std::string host;
    int ranks = 0, threads = 0, cores = 0;
};
std::vector<HostLoad> oversubscribed_hosts(const RunSummary& summary);
// A GPU that several ranks share time-sliced (no MPS): its "host bus-id" and the ranks.
struct SharedGpu {
    std::string gpu;
    std::vector<int> ranks;
};
std::vector<SharedGpu> time_sliced_gpus(const RunSummary& summary);
// The ranks bound to fewer cores than they have working threads (main thread and host streams),
// on either path, on hosts oversubscribed_hosts does not name: their threads take turns.
struct CrowdedRanks {
    std::vector<int> ranks;
    int most_threads = 0, fewest_cores = 0;
};
CrowdedRanks crowded_ranks(const RunSummary& summary);
// How to bind the ranks near their GPU with a core for each working thread of the busiest rank:
// "mpirun --bind-to core --map-by numa", or with ":PE=N" where a rank has N > 1 threads.
std::string binding_command(const RunSummary& summary);
// Why the phase times may measure waiting rather than work ("" when nothing is known to).
std::string waiting_cause(const RunSummary& summary);
// Whether the pass's transfer measured waiting rather than moving: longer than its own step, or,
// on an oversubscribed CPU path (where its thread waits for a core), mostly waiting: under
// kWaitingCeilingShare of its ceiling's speed, nine tenths of its time or more spent waiting.
// Such a transfer is kept out of bandwidth figures (the report's, and scripts/plot's through the
// CSV's flag).
inline constexpr double kWaitingCeilingShare = 0.1;
bool transfer_is_waiting(const RunSummary& summary, const PassSummary& pass);
// Whether the step model explains the pass's step (the step does not beat it kModelBeatenFactor
// times or more).
bool step_model_explains(const PassSummary& pass);
// The spread of the step period over the timed steps: unstable when one step in ten takes over
// kUnstableStepSpread longer than the median (p90 over the median). Not the cv: one slow step
// (a flush, a preemption) makes the cv large while every other step is steady; the slow steps
// are counted on a line of their own.
inline constexpr double kUnstableStepSpread = 0.10;
struct Stability {
    double p90_over_median, cv, max_over_median;
    bool unstable;
};
Stability step_stability(const PassSummary& pass);
// The report's stability line of a pass: the verdict and the one figure it is judged by, and the
// slow steps; the likely causes and what to do when unstable (said once: `causes_said` is set
// after the first pass that says them), and on the CUDA path its clock line.
void print_stability(std::FILE* out, const RunSummary& summary, const PassSummary& pass,
                     bool& causes_said);

// Whether the run's phase times can be read as the work they time (report/reading.cpp): the one
// judgement that the text report, the JSON summary, the results CSV and the file's pass
// attributes take. Where they cannot be read, the report says so once and leaves out the figures
// built on them (kWithheldFigures); the JSON, CSV and file keep every figure, with the reasons.
// Each reason is a rule of one table: more busy threads than a host's cores (oversubscribed), a
// phase faster than its ceiling by more than kCeilingTolerance (beats_ceiling), a step
// kModelBeatenFactor times faster than its step model or perfect overlap (beats_model), a transfer
// that measured waiting (transfer_waiting), and a compare run whose overlap slowed the step while
// the overlapped step beat perfect overlap (overlap_contradiction).
struct UnreadableReason {
    std::string code;  // the rule's name, as the JSON, CSV and file give it
    std::string text;  // what this run showed, in words
};
struct PhaseReading {
    std::vector<UnreadableReason> reasons;  // none: the phase times can be read
    bool readable() const { return reasons.empty(); }
    std::string codes() const;  // the reasons' codes joined by ';', "" when readable
    std::string text() const;   // the reasons' texts joined by "; "
};
PhaseReading read_phase_times(const RunSummary& summary);
// A phase at most this much faster than its ceiling is noise of the two measurements.
inline constexpr double kCeilingTolerance = 1.05;
// What the report leaves out where the phase times cannot be read: the JSON's name of each
// figure (kept there) and the report's words for it.
struct WithheldFigure {
    const char* json;
    const char* words;
};
inline constexpr WithheldFigure kWithheldFigures[] = {
    {"passes[].vs_ceilings", "the ceiling ratios"},
    {"passes[].step_bound_ms", "the step model"},
    {"overlap_ideal_ms", "perfect overlap"},
    {"overlap_attribution_ms", "its attribution"},
};
// The perfect overlap figure the report gives: with the ceilings, the attribution's (the transfer
// and C at their ceilings); without, the overlapped model of the overlap=off medians.
double perfect_overlap_ms(const RunSummary& summary);
// The header's notes on placement: GPUs shared time-sliced, ranks away from their GPU's node,
// ranks with fewer cores than working threads.
void print_placement_notes(std::FILE* out, const RunSummary& summary);
// A rank's cores and NUMA nodes as the header prints them: "cores 0-7,16 (NUMA node 0)".
std::string placement_text(const RankInfo& rank);
// Whether a rank runs on other NUMA nodes than its GPU's (both known).
bool away_from_gpu(const RankInfo& rank);

// --- The report at any rank count (report/at_scale.cpp) ---------------------------------------
// The header lists the ranks one a line up to kRanksListed, and a pass its links (pairs, hops or
// groups) and a relay its stages up to kLinksListed, where that is no longer than their summary
// (how many, the median and the extremes, and the kSlowestNamed slowest): the report stays the
// same length at any rank count. The JSON, the CSV's side tables (ranks, links) and the file keep
// every one.
inline constexpr std::size_t kSlowestNamed = 5;
inline constexpr std::size_t kRanksListed = 4;
inline constexpr std::size_t kLinksListed = 2 + kSlowestNamed;
// The header's ranks in two lines: hosts x ranks x GPUs and the roles; how they reach their peers
// and where they may run, each distinct value with its count, the commonest first.
std::vector<std::string> rank_summary_lines(const RunSummary& summary);
// A pass's links summarised: the transfers' and steps' distributions (median, min, max), how many
// are flagged slow, and the kSlowestNamed slowest (indices into the links, the slowest first, by
// the larger of their transfer and their step over the median's: the measure slow links are
// flagged by).
struct LinkSpread {
    std::size_t count = 0, flagged = 0;
    PhaseStats transfer{}, step{};
    std::vector<std::size_t> slowest;
};
LinkSpread link_spread(const std::vector<PairFigures>& links);
// The report's lines for a pass's links: one each up to kLinksListed, else the summary and the
// slowest; without the GB/s where the transfer measured waiting (`with_gbps` false).
std::vector<std::string> link_lines(const RunSummary& summary, const PassSummary& pass,
                                    bool with_gbps);

// Collective: host, device and role of every rank, valid on rank 0.
std::vector<RankInfo> gather_rank_info(MPI_Comm comm, const RankInfo& mine);

// What one rank adds to the run's summary besides its passes.
struct RankFigures {
    RankInfo info;
    std::uint64_t device_bytes = 0, host_bytes = 0;  // memory it holds
    double bytes_written = 0, write_seconds = 0;     // by its result writer (consumers)
};

// Collective over `comm`, once `summary.passes` holds every pass: gathers the ranks' info (valid
// on rank 0), takes the largest rank's memory and the total write bandwidth, and with two
// passes (compare) the overlap speedup and the time per step perfect overlap would give.
void summarize_run(MPI_Comm comm, const RankFigures& mine, RunSummary& summary);

// Before the steps: the ranks, transport, wrapped config, versions, ranks and memory (needs no
// passes in `summary`).
void print_run_header(std::FILE* out, const RunSummary& summary);
// After the run: each pass's phases and rates, the overlap speedup, verification and the output.
void print_report(std::FILE* out, const RunSummary& summary);
// "memory per rank (largest): ...", as the header prints it.
std::string memory_text(const RunSummary& summary);
// A duration in microseconds in the unit that reads: "82.5 µs", "1.95 ms", "1.95 s".
std::string duration_text_us(double us);
// The JSON summary's layout version, its "schema_version": 2 since the config values are typed
// (numbers, booleans, strings) rather than TOML literals in strings.
inline constexpr int kSummarySchemaVersion = 2;
// The JSON summary: provenance, the resolved config (typed), the ranks, each pass.
std::string summary_json(const RunSummary& summary);
// Every rank as the JSON summary's "ranks" has it (host, device, role, link, placement): JSON
// text, for the file's root attribute of the same name.
std::string ranks_json(const RunSummary& summary);
// A run of several sizes: {"schema_version", "sizes", "verified", "cases": [the summary_json of
// each size, in run order]}; `verified` covers every size of the run, those of an earlier launch
// too (a resumed run).
std::string sizes_json(const std::vector<RunSummary>& sizes, bool verified);
// A run of several sizes: the closing table, a row per size as nccl-tests prints one (size, time
// per step, the transfer and its algbw and busbw, the transfer against its ceiling, the overlap
// speedup with compare, verified), then the verdict. `first` numbers the first row: the sizes
// before it ran in a launch that stopped (a resumed run), and are only in the file.
void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first);
// Appends one row (and the header when the file is new or empty) under an exclusive lock, so
// the tasks of a job array can share one file; and the rows of its side tables.
void append_results_csv(const std::string& path, const RunSummary& summary);
// The same for the sizes of a run of several, a row each, in one append.
void append_results_csv(const std::string& path, const std::vector<RunSummary>& sizes);
// The CSV header, one line without newline: the names of results_csv_columns().
std::string results_csv_header();

// One column of the results CSV: its name, and how a run's summary gives its cell. The header
// and the row both walk this one table.
struct CsvColumn {
    std::string name;
    std::function<std::string(const RunSummary& run)> cell;
};
const std::vector<CsvColumn>& results_csv_columns();
// The row of `run`, one line without newline.
std::string results_csv_row(const RunSummary& run);
// Throws a usage error if `path`, or one of its side tables, holds rows under another header
// (another gpurelay version's columns): appending would put values under the wrong names. A
// missing or empty file is fine.
void check_results_csv_header(const std::string& path);
// The results CSV's side tables (report/side_tables.cpp), appended with its rows: a row per rank
// (`links` false: NAME.ranks.csv) and a row per link of each pass (NAME.links.csv), each starting
// with the results CSV's columns that join it to its run (tag, timestamp, git_hash, elements,
// repeat).
std::string side_table_path(const std::string& results_csv, bool links);
void check_side_table_headers(const std::string& results_csv);
void append_side_tables(const std::string& results_csv, const std::vector<RunSummary>& runs);
// Writes `text` to `path` through a temporary file and a rename: readers never see half of it.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gpurelay
