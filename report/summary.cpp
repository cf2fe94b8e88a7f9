// The cross-rank summary (reduce.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/formula.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "pipeline/pipeline.hpp"
#include "report/reduce.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// numpy.percentile's default ("linear"): at (n - 1) q, between its neighbours.
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

// The rank k (from 1) of the order statistics that bound the median's interval among n samples:
// the largest k with P(Binomial(n, 1/2) <= k - 1) <= (1 - confidence) / 2; 0 for none. Exact up
// to 20,000 samples, beyond within a rank (the normal approximation, continuity-corrected).
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

// The median's 95% and 97.5% intervals of `st`, from `at(k)`, the k-th least of n values (from 0).
template <typename AtRank>
void add_median_intervals(PhaseStats& st, std::size_t n, AtRank at) {
    if (const std::size_t k = interval_rank(n, k95); k > 0)
        std::tie(st.median_lo, st.median_hi) = std::pair(at(k - 1), at(n - k));
    if (const std::size_t k = interval_rank(n, k975); k > 0)
        std::tie(st.median_lo_975, st.median_hi_975) = std::pair(at(k - 1), at(n - k));
}

double coefficient_of_variation(const std::vector<double>& values) {
    const auto n = static_cast<double>(values.size());
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
    double squares = 0;
    for (double v : values) squares += (v - mean) * (v - mean);
    return std::sqrt(squares / n) / mean;
}

// What summarize_pass takes the largest of over the ranks (a least negated), among them the fewest
// steps in retire groups (a consumer's written steps end its groups).
struct Worst {
    double timed_wall_ms, cold_step_ms, write_wait_ms, capture_ms, graphs_captured;
    double host_queue_ms, host_retire_ms, host_callback_ms, grouped_steps;
    double sm_start_mhz, sm_end_mhz, sm_max_mhz;
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

// A link over kSlowPairMargin slower than the median, in its step or its transfer: the stop vote
// keeps every rank's steps within a cadence of the others', so a slow link shows in its transfer
// more than in the period that all links then share.
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

// Every rank's histograms summed on rank 0 (empty elsewhere), the step's only from the ranks whose
// period is their link's (`link_end`).
std::array<LogHistogram, kPhaseCount> reduce_histograms(MPI_Comm comm, const PassResult& result,
                                                        bool link_end, int rank) {
    const std::size_t buckets = LogHistogram::bucket_count(), row = buckets + 2;
    std::vector<double> sums(kPhaseCount * row), summed(rank == 0 ? sums.size() : 0);
    double extremes[kPhaseCount][2], largest[kPhaseCount][2];
    const LogHistogram none;
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
        const bool counted = link_end || p != index_of(Phase::step);
        const LogHistogram& h = counted ? result.phases[p] : none;
        // As doubles, exact below 2^53 steps a bucket, so that the sums travel with them.
        std::copy(h.counts().begin(), h.counts().end(), sums.begin() + p * row);
        sums[p * row + buckets] = h.sums().sum;
        sums[p * row + buckets + 1] = h.sums().squares;
        extremes[p][0] = -h.sums().least;  // the least as the largest negated
        extremes[p][1] = h.sums().most;
    }
    MPI_CHECK(MPI_Reduce(sums.data(), summed.data(), static_cast<int>(sums.size()), MPI_DOUBLE,
                         MPI_SUM, 0, comm));
    MPI_CHECK(MPI_Reduce(extremes, largest, 2 * kPhaseCount, MPI_DOUBLE, MPI_MAX, 0, comm));
    std::array<LogHistogram, kPhaseCount> merged;
    for (std::size_t p = 0; p < kPhaseCount && rank == 0; ++p) {
        const double* at = summed.data() + p * row;
        std::vector<std::uint64_t> counts(at, at + buckets);
        merged[p] =
            LogHistogram(counts, {at[buckets], at[buckets + 1], -largest[p][0], largest[p][1]});
    }
    return merged;
}

struct Median {
    double value, lo, hi;
};
// What rank 0 gathers of each rank, a few numbers whatever the steps: its medians of the phases
// that time a link and of its period; its slow steps' count and the first kSlowStepsKept.
struct RankMedians {
    Median send, recv;
    double step, slow_steps;
    std::array<double, kSlowStepsKept> slow;
};
std::vector<RankMedians> gather_rank_medians(MPI_Comm comm, const PassResult& result, double median,
                                             int rank, int size) {
    const auto of = [&](Phase p) {
        const PhaseStats st = phase_stats(result.phases[index_of(p)]);
        return Median{st.median, st.median_lo, st.median_hi};
    };
    const LogHistogram& periods = result.phases[index_of(Phase::step)];
    RankMedians mine{of(Phase::send), of(Phase::recv), periods.quantile(0.5), 0, {}};
    mine.slow.fill(kNaN);
    MPI_CHECK(MPI_Bcast(&median, 1, MPI_DOUBLE, 0, comm));
    if (median > 0) {
        const double bound = kSlowStepFactor * median;
        mine.slow_steps = static_cast<double>(periods.count_above(bound));
        std::vector<double> numbers;
        for (const auto& [period, step] : result.slowest.slowest())
            if (period > bound) numbers.push_back(static_cast<double>(step));
        std::sort(numbers.begin(), numbers.end());
        std::copy_n(numbers.begin(), std::min(numbers.size(), kSlowStepsKept), mine.slow.begin());
    }
    constexpr int kDoubles = sizeof(RankMedians) / sizeof(double);
    static_assert(std::is_trivially_copyable_v<RankMedians> && kDoubles == 8 + kSlowStepsKept);
    std::vector<RankMedians> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
    MPI_CHECK(MPI_Gather(&mine, kDoubles, MPI_DOUBLE, all.data(), kDoubles, MPI_DOUBLE, 0, comm));
    return all;
}

// The slow steps on rank 0: the most any rank counted (or named, if more: slow on different
// ranks), and the first kSlowStepsKept numbers of all.
void summarize_slow_steps(const std::vector<RankMedians>& medians, PassSummary& summary) {
    double most = 0;
    std::vector<std::int64_t> numbers;
    for (const RankMedians& m : medians) {
        most = std::max(most, m.slow_steps);
        for (const double step : m.slow)
            if (!std::isnan(step)) numbers.push_back(static_cast<std::int64_t>(step));
    }
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    numbers.resize(std::min(numbers.size(), kSlowStepsKept));
    summary.slow_steps =
        std::max(static_cast<std::int64_t>(most), static_cast<std::int64_t>(numbers.size()));
    summary.slow_step_numbers = numbers;
}

void reduce_verification(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                         const PassResult& result, PassSummary& summary) {
    const bool consumer = placement.role != Role::producer;
    const std::uint64_t x = consumer ? result.x_mismatches : 0;
    const std::uint64_t c = consumer ? result.c_mismatches : 0;
    const VerificationTotals mine{0, x, 0, c, result.spot_checked, result.spot_mismatches};
    static_cast<VerificationTotals&>(summary) =
        reduce_fields<std::uint64_t>(mine, MPI_UINT64_T, MPI_SUM, comm);
    const auto ran = static_cast<std::uint64_t>(result.end_step - result.first_step);
    summary.x_checked = config.elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.c_checked = config.c_elements * ran * static_cast<std::uint64_t>(placement.pairs);
}

// The slowest rank's figures (Worst), and how the pass was timed and launched, on every rank;
// ranks that did not measure their clocks (the CPU path, no NVML) left out of the clocks'.
void reduce_walls(MPI_Comm comm, const Config& config, const PassResult& result, std::size_t timed,
                  PassSummary& summary) {
    const ClockSample& start = result.clocks_start;
    const ClockSample& end = result.clocks_end;
    const bool clocked = start.measured && end.measured;
    const double none = -std::numeric_limits<double>::infinity();
    const Worst worst = reduce_fields<double>(
        Worst{result.timed_wall_ms, result.cold_step_ms, result.write_wait_ms, result.capture_ms,
              static_cast<double>(result.graphs_captured), result.host_queue_ms,
              result.host_retire_ms, result.host_callback_ms,
              -static_cast<double>(result.grouped_steps), clocked ? -start.sm_mhz : none,
              clocked ? -end.sm_mhz : none,
              clocked && !std::isnan(start.sm_max_mhz) ? start.sm_max_mhz : none},
        MPI_DOUBLE, MPI_MAX, comm);
    std::uint64_t reasons = clocked ? start.reasons | end.reasons : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &reasons, 1, MPI_UINT64_T, MPI_BOR, comm));
    summary.mean_step_ms = timed > 0 ? worst.timed_wall_ms / static_cast<double>(timed) : kNaN;
    summary.steps_per_s = 1000.0 / summary.mean_step_ms;
    summary.cold_step_ms = worst.cold_step_ms;
    summary.write_wait_ms = worst.write_wait_ms;
    summary.capture_ms = worst.capture_ms;
    summary.graphs_captured = static_cast<int>(worst.graphs_captured);
    summary.graph_steps = result.graph_steps;  // every rank replays the same steps
    summary.timing = std::string(to_string(result.timing));
    if (result.timing == Timing::sampled)
        summary.timing += ':' + std::to_string(result.timing_every);
    summary.timing_auto = config.timing == Timing::auto_select;
    summary.timing_judged_ms = result.timing_judged_ms;
    summary.phase_timed_steps = result.phase_timed_steps;  // every rank times the same steps
    summary.grouped_steps = static_cast<std::int64_t>(-worst.grouped_steps);
    summary.retire_group_steps = result.retire_group_steps;
    const double per_step_us = timed > 0 ? 1000.0 / static_cast<double>(timed) : kNaN;
    summary.host_queue_us = worst.host_queue_ms * per_step_us;
    summary.host_retire_us = worst.host_retire_ms * per_step_us;
    summary.host_callback_us = worst.host_callback_ms * per_step_us;
    summary.clocks_measured = std::isfinite(worst.sm_start_mhz);
    if (!summary.clocks_measured) return;
    summary.sm_clock_start_mhz = -worst.sm_start_mhz;
    summary.sm_clock_end_mhz = -worst.sm_end_mhz;
    summary.sm_clock_max_mhz = std::isfinite(worst.sm_max_mhz) ? worst.sm_max_mhz : kNaN;
    summary.clock_reasons = reasons;
}

// A link as the summary reads it: the ranks at the ends of its transfer, each with the phase
// that times it there, and its last rank, whose step is its period.
struct Link {
    int index = 0, producer = 0, last = 0;
    std::vector<std::pair<int, Phase>> ends;
};

// The run's links in order, each rank placed as mpi/pairing places it. Every rank of a group is
// an end of its collective (each one's time also holds waiting for the last to arrive, as either
// end's of a pair does); a broadcast's root times it as its send, the others as their receive.
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

// Each link's median period (its last rank's) and transfer, and the pass's, the median link's.
// Either end's time also holds waiting for the other: the shortest median measures the transfer
// best. The median of the links' intervals holds the median where each holds its link's.
void summarize_links(const std::vector<RankMedians>& medians, const std::vector<Link>& links,
                     double bytes, PassSummary& summary) {
    std::vector<double> transfers, los, his;
    bool intervals = true;
    for (const Link& link : links) {
        Median shortest{kNaN, kNaN, kNaN};
        for (const auto& [rank, phase] : link.ends) {
            const RankMedians& end = medians[static_cast<std::size_t>(rank)];
            const Median& m = phase == Phase::send ? end.send : end.recv;
            if (std::isnan(shortest.value) || m.value < shortest.value) shortest = m;
        }
        transfers.push_back(shortest.value);
        los.push_back(shortest.lo);
        his.push_back(shortest.hi);
        intervals = intervals && !std::isnan(shortest.lo) && !std::isnan(shortest.hi);
        summary.pairs.push_back({link.index, link.producer, link.last,
                                 medians[static_cast<std::size_t>(link.last)].step, shortest.value,
                                 gbps(bytes, shortest.value)});
    }
    flag_slow_pairs(summary.pairs);
    summary.transfer_ms = phase_stats(transfers).median;
    if (intervals) {
        summary.transfer_lo_ms = phase_stats(los).median;
        summary.transfer_hi_ms = phase_stats(his).median;
    }
}

// Every rank's RankInfo on rank 0: one gather of its texts in fixed-width fields, one of counts.
std::vector<RankInfo> gather_rank_info(MPI_Comm comm, const RankInfo& mine) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    constexpr std::size_t kField = 128;
    std::string texts;
    std::vector<int> counts;
    for (const RankField& f : kRankFields) {
        if (f.count != nullptr) counts.push_back(mine.*f.count);
        if (f.text == nullptr) continue;
        std::string text = (mine.*f.text).substr(0, kField - 1);
        text.resize(kField, '\0');
        texts += text;
    }
    const auto n = static_cast<std::size_t>(rank == 0 ? size : 0);
    std::vector<char> all_texts(texts.size() * n);
    std::vector<int> all_counts(counts.size() * n);
    MPI_CHECK(MPI_Gather(texts.data(), static_cast<int>(texts.size()), MPI_CHAR, all_texts.data(),
                         static_cast<int>(texts.size()), MPI_CHAR, 0, comm));
    MPI_CHECK(MPI_Gather(counts.data(), static_cast<int>(counts.size()), MPI_INT, all_counts.data(),
                         static_cast<int>(counts.size()), MPI_INT, 0, comm));
    std::vector<RankInfo> ranks(n);
    const char* text = all_texts.data();
    const int* count = all_counts.data();
    for (RankInfo& info : ranks) {
        for (const RankField& f : kRankFields) {
            if (f.count != nullptr) info.*f.count = *count++;
            if (f.text != nullptr) info.*f.text = std::exchange(text, text + kField);
        }
    }
    return ranks;
}

// Collective: a relay's stages, gathered whole, and the slowest group's fill latency (every rank).
RelayFigures summarize_relay(MPI_Comm comm, const PairPlacement& placement,
                             const PassResult& result) {
    const bool consumer = placement.role != Role::producer;
    const auto timed = static_cast<double>(result.end_step - result.timed_from);
    auto per_step_us = [&](double ms) { return timed > 0 ? 1000.0 * ms / timed : kNaN; };
    struct Stage {
        StageFigures figures;
        double fill_ms;
    };
    static_assert(std::is_trivially_copyable_v<Stage>);
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    Stage mine{{placement.group, relay_stage(placement), rank}, result.fill_ms};
    StageFigures& f = mine.figures;
    for (std::size_t p = 0; p < kPhaseCount; ++p) f.ms[p] = result.phases[p].quantile(0.5);
    f.x_mismatches = consumer ? result.x_mismatches : 0;
    f.c_mismatches = consumer ? result.c_mismatches : 0;
    f.host_queue_us = per_step_us(result.host_queue_ms);
    f.host_retire_us = per_step_us(result.host_retire_ms);
    f.host_callback_us = per_step_us(result.host_callback_ms);
    std::vector<Stage> all(static_cast<std::size_t>(size));
    const Deadline bound("gathering a relay's stage figures");
    MPI_CHECK(
        MPI_Allgather(&mine, sizeof(Stage), MPI_BYTE, all.data(), sizeof(Stage), MPI_BYTE, comm));
    RelayFigures figures;
    figures.stages = placement.group_size;
    for (const Stage& stage : all) {
        // The slowest group's; NaN only when no last stage measured it.
        figures.fill_ms = std::fmax(figures.fill_ms, stage.fill_ms);
        figures.stage_figures.push_back(stage.figures);
    }
    return figures;
}

}  // namespace

PhaseStats phase_stats(const LogHistogram& h) {
    PhaseStats st{h.quantile(0.5), h.least(),        h.most(), h.quantile(0.5),
                  h.quantile(0.9), h.quantile(0.99), h.cv()};
    add_median_intervals(st, h.count(), [&](std::uint64_t k) { return h.at_rank(k); });
    return st;
}

PhaseStats phase_stats(std::vector<double> values) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
        values.end());
    if (values.empty()) return {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    auto at = [&](double q) { return percentile_of_sorted(values, q); };
    const double cv = coefficient_of_variation(values);
    PhaseStats st{median, values.front(), values.back(), at(0.50), at(0.90), at(0.99), cv};
    add_median_intervals(st, n, [&](std::size_t k) { return values[k]; });
    return st;
}

VerificationTotals RunSummary::verification_totals() const {
    using V = VerificationTotals;
    V t;
    for (const V& p : passes)
        for (auto field : {&V::x_checked, &V::x_mismatches, &V::c_checked, &V::c_mismatches,
                           &V::spot_checked, &V::spot_mismatches})
            t.*field += p.*field;
    return t;
}

PassSummary summarize_pass(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                           const PassResult& result) {
    // A peer that stopped must not hold the others in these collectives.
    const Deadline bound("the reductions of a pass's summary");
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // After warm-up (and a resumed pass's cold first step), up to where it stopped.
    const std::int64_t timed = std::max<std::int64_t>(0, result.end_step - result.timed_from);

    PassSummary summary;
    summary.overlap = result.overlap;
    summary.timed_steps = timed;
    summary.timed_from = result.timed_from;
    reduce_verification(comm, config, placement, result, summary);
    reduce_walls(comm, config, result, static_cast<std::size_t>(timed), summary);
    if (config.pattern == Pattern::relay) summary.relay = summarize_relay(comm, placement, result);
    // A step's period is its link's: the last rank's of each (a pair's consumer, a hop's
    // receiving stage), never a producer's, which runs ahead by up to depth steps.
    const std::vector<Link> links = links_of(config, placement, size);
    const bool link_end = std::any_of(links.begin(), links.end(),
                                      [&](const Link& link) { return link.last == rank; });
    summary.histograms = reduce_histograms(comm, result, link_end, rank);
    for (std::size_t p = 0; p < kPhaseCount; ++p)
        summary.phases[p] = phase_stats(summary.histograms[p]);
    summary.time_per_step_ms = summary.phase(Phase::step).median;
    const std::vector<RankMedians> medians =
        gather_rank_medians(comm, result, summary.time_per_step_ms, rank, size);
    if (rank != 0) return summary;

    summarize_slow_steps(medians, summary);
    summarize_links(medians, links, static_cast<double>(config.tensor_bytes()), summary);
    summary.step_bound_ms = step_bound_ms(phase_medians(summary), config.depth, result.overlap);
    return summary;
}

Ceilings summarize_ceilings(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                            const PassResult& measured) {
    Ceilings ceilings;
    const Deadline bound("the reductions of the ceilings' figures");
    // Every rank knows alike whether any was measured.
    int any = measured.end_step > 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MIN, comm);
    if (any == 0) return ceilings;
    const PassSummary s = summarize_pass(comm, config, placement, measured);
    ceilings.measured = true;
    ceilings.transfer_ms = s.transfer_ms;
    ceilings.a_copy_ms = s.phase(Phase::a).median;
    ceilings.b_copy_ms = s.phase(Phase::b).median;
    ceilings.c_ms = s.phase(Phase::c).median;
    for (std::size_t h = 0; config.pattern == Pattern::relay && h < s.pairs.size(); ++h)
        ceilings.hop_transfer_ms.push_back(s.pairs[h].transfer_ms);
    ceilings.cost_ms = measured.timed_wall_ms;
    MPI_Allreduce(MPI_IN_PLACE, &ceilings.cost_ms, 1, MPI_DOUBLE, MPI_MAX, comm);
    return ceilings;
}

double bus_factor(Pattern pattern, int group_size) {
    if (pattern == Pattern::pairs || pattern == Pattern::relay) return 1.0;  // point to point
    return bus_factor(collective_of(pattern), group_size);
}

PhaseMedians phase_medians(const PassSummary& pass) {
    return {pass.phase(Phase::a).median, pass.transfer_ms, pass.phase(Phase::c).median,
            pass.phase(Phase::b).median};
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
    const auto [device, host, both] = reduce_fields<std::uint64_t>(
        std::array{mine.device_bytes, mine.host_bytes, mine.device_bytes + mine.host_bytes},
        MPI_UINT64_T, MPI_MAX, comm);
    std::tie(summary.device_bytes, summary.host_bytes, summary.total_bytes) =
        std::tie(device, host, both);
    const auto [bytes, seconds] = reduce_fields<double>(
        std::array{mine.bytes_written, mine.write_seconds}, MPI_DOUBLE, MPI_SUM, comm);
    summary.write_gbps = seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

}  // namespace gpurelay
