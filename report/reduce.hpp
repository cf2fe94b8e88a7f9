// Every rank's measurements reduced to one summary, collectively: whole on rank 0, the
// verification totals on every rank.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
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

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A phase's distribution over every rank's timed steps (NaN steps left out): numpy.percentile's
// percentiles, read from the histograms within 0.5%; cv the population std over the mean. The
// median's intervals are benchstat's order statistics (NaN where n is too small); the 97.5% one is
// for a ratio of two medians, two such holding both with 0.975^2 > 95%.
struct PhaseStats {
    double median, min, max;
    double p50, p90, p99, cv;
    double median_lo = kNaN, median_hi = kNaN;  // 95%
    double median_lo_975 = kNaN, median_hi_975 = kNaN;
};

// Slow steps: a period over kSlowStepFactor times the median, counted on the rank that counted
// most; the first kSlowStepsKept are named, to find them on a profile's timeline.
inline constexpr double kSlowStepFactor = 3.0;
inline constexpr std::size_t kSlowStepsKept = 8;

// A link: a pair, a relay's hop or a collective's group. `slow`: over kSlowPairMargin slower
// than the median link, in its step or its transfer.
struct PairFigures {
    int pair, producer, consumer;
    double step_ms;      // median step period on the consumer
    double transfer_ms;  // median transfer time
    double transfer_gbps;
    bool slow = false;
};
inline constexpr double kSlowPairMargin = 0.10;

// A relay's stage on its rank: each phase's median (NaN where it has none), the wrong elements it
// counted, and the host's time per timed step (µs).
struct StageFigures {
    int group = 0, stage = 0, rank = 0;
    std::array<double, kPhaseCount> ms{};  // as kPhases
    double median(Phase p) const { return ms[index_of(p)]; }
    std::uint64_t x_mismatches = 0, c_mismatches = 0;
    double host_queue_us = 0, host_retire_us = 0, host_callback_us = 0;
};
// A relay's stages (every rank, in rank order) and its fill latency, the slowest group's.
struct RelayFigures {
    int stages = 0;  // per group
    std::vector<StageFigures> stage_figures;
    double fill_ms = kNaN;
};

inline const char* pass_name(bool overlap) { return overlap ? "overlap=on" : "overlap=off"; }

// Elements checked and found wrong: a pass's, or the run's.
struct VerificationTotals {
    std::uint64_t x_checked = 0, x_mismatches = 0, c_checked = 0, c_mismatches = 0;
    std::uint64_t spot_checked = 0, spot_mismatches = 0;
    bool verified() const { return x_mismatches == 0 && c_mismatches == 0 && spot_mismatches == 0; }
};

struct PassSummary : VerificationTotals {
    bool overlap = true;
    std::int64_t timed_steps = 0, timed_from = 0;
    std::array<PhaseStats, kPhaseCount> phases{};  // as kPhases
    const PhaseStats& phase(Phase p) const { return phases[index_of(p)]; }
    std::array<LogHistogram, kPhaseCount> histograms{};  // every rank's, summed on rank 0
    // The median link's transfer and its 95% interval, the median of the links' intervals.
    double transfer_ms = 0, transfer_lo_ms = kNaN, transfer_hi_ms = kNaN;
    // The median period; the mean (wall time over the timed steps), and 1000 / the mean.
    double time_per_step_ms = 0, mean_step_ms = 0, steps_per_s = 0;
    double cold_step_ms = 0, write_wait_ms = 0;
    double step_bound_ms = 0;  // the step model: the time per step these medians give
    int graphs_captured = 0;   // graphs = true: graphs captured, their host time, steps replayed
    double capture_ms = 0;
    std::int64_t graph_steps = 0;
    // Host time per timed step (µs) on the rank where it is longest (see PassResult).
    double host_queue_us = 0, host_retire_us = 0, host_callback_us = 0;
    // The timing ("sampled:16"), whether auto chose it and from what warm-up step (NaN: none),
    // and the timed steps with phase times.
    std::string timing;
    bool timing_auto = false;
    double timing_judged_ms = 0;
    std::int64_t phase_timed_steps = 0;
    // Timed steps that share their end event, and the most steps one end event retires.
    std::int64_t grouped_steps = 0, retire_group_steps = 1;
    std::vector<PairFigures> pairs;  // the links; a relay's hops
    std::optional<RelayFigures> relay;
    std::int64_t slow_steps = 0;
    std::vector<std::int64_t> slow_step_numbers;
    // The SM clock (NVML): the slowest rank's at the timed steps' start and end, the highest
    // maximum, every slowdown reason seen; NaN and 0 where no rank measured them.
    bool clocks_measured = false;
    double sm_clock_start_mhz = kNaN, sm_clock_end_mhz = kNaN, sm_clock_max_mhz = kNaN;
    std::uint64_t clock_reasons = 0;
};

struct RankInfo {
    std::string host, device, bus_id, role;
    std::string peer_link;  // how this rank's GPU reaches its peer's
    int pair = 0;           // its pair, or in a relay or a collective its row of /y
    // Where it may run: cores ("0-7,16"), their NUMA nodes, its GPU's ("": unknown), the core
    // count, and its working threads on the CPU path.
    std::string cores, core_numa, gpu_numa;
    int core_count = 0, host_threads = 0;
};
// RankInfo's fields, one table for the gather, the JSON and the CSV: a text or a count each.
struct RankField {
    const char* name;
    std::string RankInfo::*text;
    int RankInfo::*count;
};
inline constexpr RankField kRankFields[] = {{"host", &RankInfo::host, nullptr},
                                            {"device", &RankInfo::device, nullptr},
                                            {"bus_id", &RankInfo::bus_id, nullptr},
                                            {"role", &RankInfo::role, nullptr},
                                            {"pair", nullptr, &RankInfo::pair},
                                            {"peer_link", &RankInfo::peer_link, nullptr},
                                            {"cores", &RankInfo::cores, nullptr},
                                            {"core_numa", &RankInfo::core_numa, nullptr},
                                            {"gpu_numa", &RankInfo::gpu_numa, nullptr},
                                            {"core_count", nullptr, &RankInfo::core_count},
                                            {"host_threads", nullptr, &RankInfo::host_threads}};

// The phases' ceilings measured alone in the same launch (calibrate = true), in ms: the bare
// transfer, a device copy of the tensor (A's and B's), C alone; and what measuring them took.
struct Ceilings {
    bool measured = false;
    double transfer_ms = 0, a_copy_ms = 0, b_copy_ms = 0, c_ms = 0, cost_ms = 0;
    std::vector<double> hop_transfer_ms;  // a relay's: each hop's bare transfer
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
    double overlap_speedup = 0;   // compare only: time per step off / on (0 otherwise)
    double overlap_ideal_ms = 0;  // compare only: the overlapped step model of the off medians
    // The largest rank's memory: device (host on the CPU path), pinned host, and both.
    std::uint64_t device_bytes = 0, host_bytes = 0, total_bytes = 0;
    double write_gbps = 0;
    double output_bytes = 0;  // the result file once complete, at most; checked to fit at start
    std::string versions;     // "gpurelay 0.1.0 (git) CUDA ... NCCL ... MPI ... HDF5 ..."
    std::string timestamp, git_hash;
    // A resumed run's starting step, pass (in run order) and size; -1: not resumed.
    std::int64_t resumed_step = -1, resumed_pass = 0, resumed_size = 0;

    VerificationTotals verification_totals() const;
    bool verified() const { return verification_totals().verified(); }
    // A compare run's writing pass waited on the file writer: the speedup includes I/O.
    bool speedup_includes_io() const {
        return overlap_speedup > 0 && passes.back().write_wait_ms > 0.0;
    }
    const PassSummary& main_pass() const { return passes.back(); }
};

// What one rank adds to the run's summary besides its passes.
struct RankFigures {
    RankInfo info;
    std::uint64_t device_bytes = 0, host_bytes = 0;  // memory it holds
    double bytes_written = 0, write_seconds = 0;     // by its result writer (consumers)
};

// Collective: every rank's histograms summed and its figures reduced (nothing that grows with
// the steps travels).
PassSummary summarize_pass(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                           const PassResult& result);
// Collective: the ceilings Pipeline::ceilings() measured, reduced as a pass is.
Ceilings summarize_ceilings(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                            const PassResult& measured);
// Collective, once `summary.passes` holds every pass: the ranks, the memory, the write
// bandwidth, and with two passes the overlap speedup and perfect overlap.
void summarize_run(MPI_Comm comm, const RankFigures& mine, RunSummary& summary);

// The distribution of `values` (NaN left out; all NaN without any), or of a histogram.
PhaseStats phase_stats(std::vector<double> values);
PhaseStats phase_stats(const LogHistogram& histogram);
// nccl-tests' bus bandwidth factor: point-to-point and broadcast 1, all-reduce 2(n-1)/n.
double bus_factor(Pattern pattern, int group_size);
// The medians step_bound_ms() takes.
PhaseMedians phase_medians(const PassSummary& pass);

}  // namespace gpurelay
