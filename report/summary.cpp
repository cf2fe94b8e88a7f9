// The cross-rank summary: every rank's measurements of a pass reduced to one PassSummary, and
// the run's figures (ranks, memory, write rate, the overlap speedup) gathered once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/formula.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "pipeline/pipeline.hpp"
#include "report/report.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy.percentile's default ("linear"): the sorted samples' value at (n - 1) * q, interpolated
// between its neighbours.
double percentile_of_sorted(const std::vector<double>& sorted, double q) {
    const double at = (static_cast<double>(sorted.size()) - 1.0) * q;
    const auto below = static_cast<std::size_t>(std::floor(at));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// The median's interval at a confidence, with the normal approximation's z for large counts.
struct Coverage {
    double confidence, z;
};
constexpr Coverage k95{0.95, 1.959964}, k975{0.975, 2.241403};

// The rank k (1-based) of the order statistics that bound the median's interval among n samples:
// the largest k with P(Binomial(n, 1/2) <= k - 1) at most the tail (1 - confidence) / 2; 0 where
// no k is (too few samples). Exact up to 20,000 samples; beyond, the normal approximation with
// its continuity correction, within a rank of it.
std::size_t interval_rank(std::size_t n, const Coverage& c) {
    const double tail = (1 - c.confidence) / 2, count = static_cast<double>(n);
    if (n > 20000) {
        return static_cast<std::size_t>(
            std::floor(0.5 * count - 0.5 * c.z * std::sqrt(count) + 0.5));
    }
    double log_pmf = -count * std::log(2.0), cdf = 0;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n / 2; ++i) {
        cdf += std::exp(log_pmf);
        if (cdf > tail * (1 + 1e-12)) break;
        k = i + 1;
        log_pmf += std::log((count - static_cast<double>(i)) / static_cast<double>(i + 1));
    }
    return k;
}

double coefficient_of_variation(const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) sum += v;
    const double mean = sum / static_cast<double>(values.size());
    double squares = 0;
    for (double v : values) squares += (v - mean) * (v - mean);
    return std::sqrt(squares / static_cast<double>(values.size())) / mean;
}

// What summarize_pass sums over the ranks, by name.
struct Counts {
    std::uint64_t x_mismatches, c_mismatches, spot_checked, spot_mismatches;
};
// What it takes the largest of over the ranks: the slowest rank's wall times.
struct Walls {
    double timed_wall_ms, cold_step_ms, write_wait_ms, capture_ms, graphs_captured;
    double host_queue_ms, host_retire_ms, host_callback_ms;
};

// One all-reduce of every field of `fields`, a struct of nothing but `Field`s.
template <typename Field, typename Fields>
Fields reduce_fields(const Fields& fields, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    static_assert(std::is_trivially_copyable_v<Fields> && sizeof(Fields) % sizeof(Field) == 0);
    Fields reduced{};
    MPI_CHECK(MPI_Allreduce(&fields, &reduced, static_cast<int>(sizeof(Fields) / sizeof(Field)),
                            type, op, comm));
    return reduced;
}

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : kNaN; }

// Steps s in [from, end) whose period on some rank exceeds kSlowStepFactor x `median`.
template <typename Period>
void find_slow_steps(std::size_t from, std::size_t end, int ranks, double median, Period period,
                     PassSummary& summary) {
    if (!(median > 0)) return;
    for (std::size_t s = from; s < end; ++s) {
        bool slow = false;
        for (int r = 0; r < ranks && !slow; ++r) slow = period(r, s) > kSlowStepFactor * median;
        if (!slow) continue;
        if (summary.slow_step_numbers.size() < kSlowStepsKept)
            summary.slow_step_numbers.push_back(static_cast<std::int64_t>(s));
        ++summary.slow_steps;
    }
}

// A pair more than kSlowPairMargin slower than the median pair, in its step or its transfer:
// the stop vote keeps every rank's step loop within a step of the others', so a slow link shows
// in its transfer more than in the period that all pairs then share.
void flag_slow_pairs(std::vector<PairFigures>& pairs) {
    if (pairs.size() < 2) return;
    std::vector<double> steps, transfers;
    for (const PairFigures& f : pairs) {
        steps.push_back(f.step_ms);
        transfers.push_back(f.transfer_ms);
    }
    const double step = phase_stats(steps).median, transfer = phase_stats(transfers).median;
    for (PairFigures& f : pairs) {
        f.slow = f.step_ms > (1 + kSlowPairMargin) * step ||
                 f.transfer_ms > (1 + kSlowPairMargin) * transfer;
    }
}

// Every rank's clock samples reduced: the slowest clocks at the start and end, the highest
// maximum and every slowdown reason seen; unmeasured ranks (the CPU path, no NVML) left out.
void reduce_clocks(MPI_Comm comm, const PassResult& result, PassSummary& summary) {
    const ClockSample& start = result.clocks_start;
    const ClockSample& end = result.clocks_end;
    const bool measured = start.measured && end.measured;
    const double inf = std::numeric_limits<double>::infinity();
    // Minima as negated maxima, so one reduction takes all three.
    double clocks[3] = {measured ? -start.sm_mhz : -inf, measured ? -end.sm_mhz : -inf,
                        measured && !std::isnan(start.sm_max_mhz) ? start.sm_max_mhz : -inf};
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, clocks, 3, MPI_DOUBLE, MPI_MAX, comm));
    std::uint64_t reasons = measured ? start.reasons | end.reasons : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &reasons, 1, MPI_UINT64_T, MPI_BOR, comm));
    summary.clocks_measured = std::isfinite(clocks[0]);
    if (!summary.clocks_measured) return;
    summary.sm_clock_start_mhz = -clocks[0];
    summary.sm_clock_end_mhz = -clocks[1];
    summary.sm_clock_max_mhz = std::isfinite(clocks[2]) ? clocks[2] : kNaN;
    summary.clock_reasons = reasons;
}

// Every rank's step times on rank 0 (steps x phases doubles per rank), read by rank, step and
// phase.
struct StepTable {
    std::vector<double> all;  // rank 0's; empty on the others
    std::size_t steps = 0;
    double at(int rank, std::size_t step, Phase phase) const {
        return all[(static_cast<std::size_t>(rank) * steps + step) * kPhaseCount + index_of(phase)];
    }
};

StepTable gather_step_times(MPI_Comm comm, const PassResult& result, std::int64_t step_count,
                            int rank, int size) {
    StepTable table;
    table.steps = static_cast<std::size_t>(step_count);
    std::vector<double> mine(table.steps * kPhaseCount);
    for (std::size_t s = 0; s < table.steps; ++s) {
        for (std::size_t p = 0; p < kPhaseCount; ++p)
            mine[s * kPhaseCount + p] = result.steps[s].*kPhases[p].member;
    }
    table.all.resize(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
    MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, table.all.data(),
                         static_cast<int>(mine.size()), MPI_DOUBLE, 0, comm));
    return table;
}

// The verification totals over every rank, on every rank.
void reduce_verification(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                         const PassResult& result, PassSummary& summary) {
    Counts counts{0, 0, result.spot_checked, result.spot_mismatches};
    if (placement.role != Role::producer) {
        for (std::size_t s = 0; s < static_cast<std::size_t>(config.steps); ++s) {
            counts.x_mismatches += result.x_mismatches[s];
            counts.c_mismatches += result.c_mismatches[s];
        }
    }
    const Counts totals = reduce_fields<std::uint64_t>(counts, MPI_UINT64_T, MPI_SUM, comm);
    const auto ran = static_cast<std::uint64_t>(result.end_step - result.first_step);
    summary.x_checked = config.elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.c_checked = config.c_elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.x_mismatches = totals.x_mismatches;
    summary.c_mismatches = totals.c_mismatches;
    summary.spot_checked = totals.spot_checked;
    summary.spot_mismatches = totals.spot_mismatches;
}

// The slowest rank's wall times, and how the pass was timed and launched, on every rank.
void reduce_walls(MPI_Comm comm, const Config& config, const PassResult& result, std::size_t timed,
                  PassSummary& summary) {
    const Walls worst = reduce_fields<double>(
        Walls{result.timed_wall_ms, result.cold_step_ms, result.write_wait_ms, result.capture_ms,
              static_cast<double>(result.graphs_captured), result.host_queue_ms,
              result.host_retire_ms, result.host_callback_ms},
        MPI_DOUBLE, MPI_MAX, comm);
    summary.mean_step_ms = timed > 0 ? worst.timed_wall_ms / static_cast<double>(timed) : kNaN;
    summary.steps_per_s = 1000.0 / summary.mean_step_ms;
    summary.cold_step_ms = worst.cold_step_ms;
    summary.write_wait_ms = worst.write_wait_ms;
    summary.capture_ms = worst.capture_ms;
    summary.graphs_captured = static_cast<int>(worst.graphs_captured);
    summary.graph_steps = result.graph_steps;  // every rank replays the same steps
    summary.timing = std::string(to_string(result.timing));
    if (result.timing == Timing::sampled) {
        summary.timing += ':';
        summary.timing += std::to_string(result.timing_every);
    }
    summary.timing_auto = config.timing == Timing::auto_select;
    summary.timing_judged_ms = result.timing_judged_ms;
    summary.phase_timed_steps = result.phase_timed_steps;  // every rank times the same steps
    // The rank that groups the fewest steps (a consumer's written steps end its groups).
    std::int64_t grouped = result.grouped_steps;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &grouped, 1, MPI_INT64_T, MPI_MIN, comm));
    summary.grouped_steps = grouped;
    summary.retire_group_steps = result.retire_group_steps;
    const double per_step_us = timed > 0 ? 1000.0 / static_cast<double>(timed) : kNaN;
    summary.host_queue_us = worst.host_queue_ms * per_step_us;
    summary.host_retire_us = worst.host_retire_ms * per_step_us;
    summary.host_callback_us = worst.host_callback_ms * per_step_us;
}

// One pair, or a collective's group, as the summary reads it: the ranks at the ends of its
// transfer, each with the phase that times it there, and its last rank, whose step is its period.
struct Link {
    int index = 0, producer = 0, last = 0;
    std::vector<std::pair<int, Phase>> ends;
};

// The run's links in order, each rank placed as mpi/pairing places it. A collective's time, seen
// from each rank of its group, also holds waiting for the last one to arrive (as a pair's, seen
// from either end, holds waiting for the other): each rank of a group is an end. A broadcast's
// root times it as its send, the others as their receive.
std::vector<Link> links_of(const Config& config, const PairPlacement& placement, int size) {
    const bool relay = config.pattern == Pattern::relay;
    const bool pairs = config.pattern == Pattern::pairs || relay;  // a relay's hops are pairs
    std::vector<Link> links(static_cast<std::size_t>(pairs ? placement.pairs : placement.groups));
    const int n = placement.group_size;
    for (int r = 0; r < size; ++r) {
        const PairPlacement p =
            relay   ? place_relay(r, size, n)
            : pairs ? place_pairs(r, size, config.pairing == Pairing::split)
                    : place_groups(r, size, n, collective_of(config.pattern), kMaxAllreduceGroup);
        if (pairs && p.role == Role::producer) continue;  // its pair is made from its consumer
        Link& link = links[static_cast<std::size_t>(pairs ? p.pair : p.group)];
        link.index = pairs ? p.pair : p.group;
        link.producer = p.producer;
        link.last = pairs && !relay ? p.consumer : r;  // a hop's receiving stage is r itself
        if (pairs) {
            link.ends = {{p.producer, Phase::send}, {link.last, Phase::recv}};
        } else {
            const bool root_sends =
                config.pattern == Pattern::broadcast && n > 1 && p.group_rank == 0;
            link.ends.emplace_back(r, root_sends ? Phase::send : Phase::recv);
        }
    }
    return links;
}

// Each link's median period and transfer, and the pass's transfer over every link. A transfer's
// time, seen from either end, also holds waiting for the other end (the sender for a receiver
// still busy; the receiver for a sender whose A ran late): the shortest is the closest measure of
// the transfer itself.
void summarize_links(const StepTable& table, const std::vector<Link>& links, std::size_t from,
                     std::size_t end, double bytes, PassSummary& summary) {
    std::vector<double> all_transfers;
    for (const Link& link : links) {
        std::vector<double> transfers, periods;
        for (std::size_t s = from; s < end; ++s) {
            double shortest = kNaN;
            for (const auto& [rank, phase] : link.ends) {
                shortest = std::fmin(shortest, table.at(rank, s, phase));
            }
            transfers.push_back(shortest);
            periods.push_back(table.at(link.last, s, Phase::step));
        }
        all_transfers.insert(all_transfers.end(), transfers.begin(), transfers.end());
        const double transfer_ms = phase_stats(transfers).median;
        summary.pairs.push_back({link.index, link.producer, link.last, phase_stats(periods).median,
                                 transfer_ms, gbps(bytes, transfer_ms)});
    }
    flag_slow_pairs(summary.pairs);
    const PhaseStats transfer = phase_stats(std::move(all_transfers));
    summary.transfer_ms = transfer.median;
    summary.transfer_lo_ms = transfer.median_lo;
    summary.transfer_hi_ms = transfer.median_hi;
}

}  // namespace

PhaseStats phase_stats(std::vector<double> values) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
        values.end());
    if (values.empty()) return {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    PhaseStats st{median,
                  values.front(),
                  values.back(),
                  percentile_of_sorted(values, 0.50),
                  percentile_of_sorted(values, 0.90),
                  percentile_of_sorted(values, 0.99),
                  coefficient_of_variation(values)};
    if (const std::size_t k = interval_rank(n, k95); k > 0) {
        st.median_lo = values[k - 1];
        st.median_hi = values[n - k];
    }
    if (const std::size_t k = interval_rank(n, k975); k > 0) {
        st.median_lo_975 = values[k - 1];
        st.median_hi_975 = values[n - k];
    }
    return st;
}

bool RunSummary::verified() const {
    return std::all_of(passes.begin(), passes.end(),
                       [](const PassSummary& p) { return p.verified(); });
}

VerificationTotals RunSummary::verification_totals() const {
    VerificationTotals t;
    for (const PassSummary& p : passes) {
        t.x_checked += p.x_checked;
        t.x_mismatches += p.x_mismatches;
        t.c_checked += p.c_checked;
        t.c_mismatches += p.c_mismatches;
        t.spot_checked += p.spot_checked;
        t.spot_mismatches += p.spot_mismatches;
    }
    return t;
}

PassSummary summarize_pass(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                           const PassResult& result) {
    // Collective (a gather and reductions): a peer that stopped must not hold the others here.
    const Deadline bound("the reductions of a pass's summary");
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const StepTable table = gather_step_times(comm, result, config.steps, rank, size);
    // The steps this pass timed: after warm-up (and after the cold first step of a resumed
    // pass), up to where it stopped.
    const auto from = static_cast<std::size_t>(result.timed_from);
    const auto end = static_cast<std::size_t>(result.end_step);
    const std::size_t timed = end > from ? end - from : 0;

    PassSummary summary;
    summary.overlap = result.overlap;
    summary.timed_steps = static_cast<std::int64_t>(timed);
    summary.timed_from = result.timed_from;
    reduce_verification(comm, config, placement, result, summary);
    reduce_walls(comm, config, result, timed, summary);
    reduce_clocks(comm, result, summary);
    if (config.pattern == Pattern::relay) summary.relay = summarize_relay(comm, placement, result);
    if (rank != 0) return summary;

    // A step's period is its link's: the last rank's of each (a pair's consumer, a hop's
    // receiving stage), never a producer's, which runs ahead by up to depth steps.
    const std::vector<Link> links = links_of(config, placement, size);
    std::vector<bool> link_end(static_cast<std::size_t>(size), false);
    for (const Link& link : links) link_end[static_cast<std::size_t>(link.last)] = true;
    for (const PhaseInfo& phase : kPhases) {
        std::vector<double> samples;
        for (int r = 0; r < size; ++r) {
            if (phase.phase == Phase::step && !link_end[static_cast<std::size_t>(r)]) continue;
            for (std::size_t s = from; s < end; ++s) samples.push_back(table.at(r, s, phase.phase));
        }
        summary.phases[index_of(phase.phase)] = phase_stats(std::move(samples));
    }
    summary.time_per_step_ms = summary.phase(Phase::step).median;
    find_slow_steps(
        from, end, size, summary.time_per_step_ms,
        [&](int r, std::size_t s) { return table.at(r, s, Phase::step); }, summary);
    summarize_links(table, links, from, end, static_cast<double>(config.tensor_bytes()), summary);
    summary.step_bound_ms = step_bound_ms(phase_medians(summary), config.depth, result.overlap);
    return summary;
}

double bus_factor(Pattern pattern, int group_size) {
    if (pattern == Pattern::pairs || pattern == Pattern::relay) return 1.0;  // point to point
    return bus_factor(collective_of(pattern), group_size);
}

PhaseMedians phase_medians(const PassSummary& pass) {
    return {pass.phase(Phase::a).median, pass.transfer_ms, pass.phase(Phase::c).median,
            pass.phase(Phase::b).median};
}

std::vector<RankInfo> gather_rank_info(MPI_Comm comm, const RankInfo& mine) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // One fixed-width record per rank keeps this to a single gather.
    constexpr int kField = 128;
    constexpr int kFields = 8;
    std::string record(kFields * kField, '\0');
    const std::string fields[kFields] = {mine.host,      mine.device,    mine.bus_id,
                                         mine.role,      mine.peer_link, mine.cores,
                                         mine.core_numa, mine.gpu_numa};
    for (int f = 0; f < kFields; ++f) {
        record.replace(static_cast<std::size_t>(f * kField),
                       std::min<std::size_t>(fields[f].size(), kField - 1),
                       fields[f].substr(0, kField - 1));
    }
    record.resize(kFields * kField);
    std::vector<char> all(rank == 0 ? record.size() * static_cast<std::size_t>(size) : 0);
    constexpr int kCounts = 3;
    const int counts[kCounts] = {mine.pair, mine.core_count, mine.host_threads};
    std::vector<int> all_counts(rank == 0 ? static_cast<std::size_t>(size) * kCounts : 0);
    MPI_CHECK(MPI_Gather(record.data(), kFields * kField, MPI_CHAR, all.data(), kFields * kField,
                         MPI_CHAR, 0, comm));
    MPI_CHECK(MPI_Gather(counts, kCounts, MPI_INT, all_counts.data(), kCounts, MPI_INT, 0, comm));
    std::vector<RankInfo> ranks;
    for (int r = 0; rank == 0 && r < size; ++r) {
        RankInfo info;
        std::string* out[kFields] = {&info.host,      &info.device,    &info.bus_id,
                                     &info.role,      &info.peer_link, &info.cores,
                                     &info.core_numa, &info.gpu_numa};
        for (int f = 0; f < kFields; ++f) {
            *out[f] = std::string(all.data() + (r * kFields + f) * kField);
        }
        const int* count = all_counts.data() + static_cast<std::size_t>(r) * kCounts;
        info.pair = count[0];
        info.core_count = count[1];
        info.host_threads = count[2];
        ranks.push_back(info);
    }
    return ranks;
}

void summarize_run(MPI_Comm comm, const RankFigures& mine, RunSummary& summary) {
    const Deadline bound("the reductions of the run's summary");
    summary.ranks = gather_rank_info(comm, mine.info);
    if (summary.passes.size() == 2) {
        summary.overlap_speedup =
            summary.passes[0].time_per_step_ms / summary.passes[1].time_per_step_ms;
        summary.overlap_ideal_ms =
            step_bound_ms(phase_medians(summary.passes[0]), summary.config.depth, /*overlap=*/true);
    }
    struct Memory {
        std::uint64_t device_bytes, host_bytes, total_bytes;
    };
    const Memory largest = reduce_fields<std::uint64_t>(
        Memory{mine.device_bytes, mine.host_bytes, mine.device_bytes + mine.host_bytes},
        MPI_UINT64_T, MPI_MAX, comm);
    summary.device_bytes = largest.device_bytes;
    summary.host_bytes = largest.host_bytes;
    summary.total_bytes = largest.total_bytes;
    struct Writes {
        double bytes, seconds;
    };
    const Writes total = reduce_fields<double>(Writes{mine.bytes_written, mine.write_seconds},
                                               MPI_DOUBLE, MPI_SUM, comm);
    summary.write_gbps = total.seconds > 0 ? total.bytes / total.seconds / 1e9 : 0.0;
}

}  // namespace gpurelay
