// The report: the cross-rank statistics of a pass (under mpirun -np 1 and 2), the step bound it
// is held against, and the CSV and JSON, each made from one table.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/step_bound.hpp"
#include "report/render.hpp"
#include "report/write.hpp"
#include "runtime/error.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// How far a median read from the pass's histograms may lie from the exact one.
constexpr double kError = LogHistogram::kRelativeError;

using test::world_rank;
using test::world_size;

Config small_config() {
    Config c;
    c.elements = 1000;
    c.c_elements = 500;
    c.c_iterations = 10;
    c.steps = 8;
    c.warmup = 2;
    c.depth = 2;
    return c;
}

// Step s's times on this rank, as the pipeline would leave them: the producer's phases on the
// producer, the consumer's on the consumer, both with one rank; NaN for the other role's.
StepTimes times_of(std::int64_t s, Role role) {
    const double x = static_cast<double>(s);
    StepTimes t;
    if (role != Role::consumer) {
        t.a = 1.0 + x;
        t.send = 3.0 + x;
    }
    if (role != Role::producer) {
        t.recv = 2.0 + x;  // shorter than the send: the transfer is the receive
        t.c = 5.0 + 2 * x;
        t.wait = 0.5;
        t.b = 4.0 + x;
    }
    t.period = s == 0 ? kNaN : 10.0 + x;
    return t;
}

// A pass whose steps retired with times_of, each first given to `change`.
PassResult pass_result(const Config& config, Role role,
                       const std::function<void(std::int64_t, StepTimes&)>& change = {}) {
    PassResult r;
    r.overlap = true;
    r.end_step = config.steps;
    r.timed_from = config.warmup;
    for (std::int64_t s = 0; s < config.steps; ++s) {
        StepTimes t = times_of(s, role);
        if (change) change(s, t);
        r.retire_step(s, t);
        // C went wrong once, on each consumer.
        r.retire_counts(s, 0, role != Role::producer && s == 3 ? 7 : 0);
    }
    r.timed_wall_ms = 60.0 * (world_rank() + 1);  // the slowest rank's counts
    r.cold_step_ms = 9.0;
    r.spot_checked = role != Role::producer ? 1000 : 0;
    return r;
}

// The timed steps are 2..7: medians of x + k over them are 4.5 + k.
TEST(ReportStatistics, PhaseMediansMinMaxOverTheTimedStepsOfEveryRank) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    const PassSummary p =
        summarize_pass(MPI_COMM_WORLD, config, placement, pass_result(config, placement.role));
    // Totals on every rank, so every rank agrees on the exit code.
    const auto pairs = static_cast<std::uint64_t>(placement.pairs);
    EXPECT_EQ(p.c_mismatches, 7 * pairs);
    EXPECT_EQ(p.x_mismatches, 0u);
    EXPECT_EQ(p.x_checked, 1000u * 8 * pairs);
    EXPECT_EQ(p.c_checked, 500u * 8 * pairs);
    EXPECT_EQ(p.spot_checked, 1000u * pairs);
    EXPECT_FALSE(p.verified());
    EXPECT_EQ(p.timed_steps, 6);
    EXPECT_DOUBLE_EQ(p.mean_step_ms, 60.0 * world_size() / 6);  // the slowest rank's wall time
    EXPECT_DOUBLE_EQ(p.cold_step_ms, 9.0);
    if (world_rank() != 0) return;  // the statistics are rank 0's
    // Medians within the histograms' relative error; the extremes exact.
    const auto expect = [&](Phase phase, double median, double min, double max) {
        const PhaseStats& st = p.phase(phase);
        EXPECT_NEAR(st.median, median, kError * median) << kPhases[index_of(phase)].name;
        EXPECT_DOUBLE_EQ(st.min, min) << kPhases[index_of(phase)].name;
        EXPECT_DOUBLE_EQ(st.max, max) << kPhases[index_of(phase)].name;
    };
    expect(Phase::a, 5.5, 3.0, 8.0);
    expect(Phase::send, 7.5, 5.0, 10.0);
    expect(Phase::recv, 6.5, 4.0, 9.0);
    expect(Phase::c, 14.0, 9.0, 19.0);
    expect(Phase::wait, 0.5, 0.5, 0.5);
    expect(Phase::b, 8.5, 6.0, 11.0);
    expect(Phase::step, 14.5, 12.0, 17.0);  // the consumer's period (NaN-free after step 0)
    // The time per step is the median period, with its interval: 6 steps give the least and
    // the largest (a 96.9% interval), and no 97.5% one.
    EXPECT_DOUBLE_EQ(p.time_per_step_ms, p.phase(Phase::step).median);
    EXPECT_DOUBLE_EQ(p.phase(Phase::step).median_lo, 12.0);
    EXPECT_DOUBLE_EQ(p.phase(Phase::step).median_hi, 17.0);
    EXPECT_TRUE(std::isnan(p.phase(Phase::step).median_lo_975));
    // The transfer: the shorter of the producer's send and the consumer's receive.
    EXPECT_NEAR(p.transfer_ms, 6.5, kError * 6.5);
    ASSERT_EQ(p.pairs.size(), static_cast<std::size_t>(placement.pairs));
    EXPECT_NEAR(p.pairs[0].transfer_ms, 6.5, kError * 6.5);
    EXPECT_NEAR(p.pairs[0].step_ms, 14.5, kError * 14.5);
    // Its interval: the receive's median's, 6 steps giving its least and largest.
    EXPECT_DOUBLE_EQ(p.transfer_lo_ms, 4.0);
    EXPECT_DOUBLE_EQ(p.transfer_hi_ms, 9.0);
    RunSummary run;
    run.config = config;
    run.passes = {p};
    const PassJudgement j = judge(run).passes[0];
    EXPECT_DOUBLE_EQ(j[PassFig::a_rate].value, 4000.0 / (p.phase(Phase::a).median * 1e6));
    EXPECT_NEAR(j[PassFig::a_rate].value, 4000.0 / (5.5 * 1e6), kError * 4000.0 / (5.5 * 1e6));
    EXPECT_DOUBLE_EQ(j[PassFig::b_rate].value, 8000.0 / (p.phase(Phase::b).median * 1e6));
    EXPECT_DOUBLE_EQ(j[PassFig::a_rate].hi, 4000.0 / (3.0 * 1e6)) << "the interval's ends swap";
    // The step bound of the medians: overlap on, depth 2: max(A + transfer, C + B).
    EXPECT_NEAR(p.step_bound_ms, std::max(5.5 + 6.5, 14.0 + 8.5), kError * 22.5);
    EXPECT_DOUBLE_EQ(p.step_bound_ms, step_bound_ms(phase_medians(p), 2, true));
    // cv from the exact sums: the period's, 12..17 ms, on every rank.
    EXPECT_NEAR(p.phase(Phase::step).cv, 1.707825127659933 / 14.5, 1e-9);
}

// The values numpy gives for the same samples: numpy.percentile (linear) and std / mean.
TEST(ReportStatistics, PercentilesAreNumpysLinearInterpolation) {
    const PhaseStats st = phase_stats({3, 1, 4, kNaN, 1, 5, 9, 2, 6, 5, 3.5});
    EXPECT_DOUBLE_EQ(st.median, 3.75);
    EXPECT_DOUBLE_EQ(st.min, 1.0);
    EXPECT_DOUBLE_EQ(st.max, 9.0);
    EXPECT_DOUBLE_EQ(st.p50, 3.75);
    EXPECT_NEAR(st.p90, 6.3, 1e-12);
    EXPECT_NEAR(st.p99, 8.73, 1e-12);
    EXPECT_NEAR(st.cv, 0.589525621376963, 1e-12);
    // The median's intervals, from the order statistics as scipy's binomial gives their ranks
    // (scripts/compare's median_interval): of 10 samples the 2nd and 9th at 95% and at 97.5%.
    EXPECT_DOUBLE_EQ(st.median_lo, 1.0);
    EXPECT_DOUBLE_EQ(st.median_hi, 6.0);
    EXPECT_DOUBLE_EQ(st.median_lo_975, 1.0);
    EXPECT_DOUBLE_EQ(st.median_hi_975, 6.0);
    std::vector<double> many(30000);
    for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
    const PhaseStats h = phase_stats({many.begin(), many.begin() + 100});
    EXPECT_DOUBLE_EQ(h.median_lo, 39.0);  // the 40th: binom.cdf(39, 100, .5) = 0.0176 <= 0.025
    EXPECT_DOUBLE_EQ(h.median_hi, 60.0);
    EXPECT_DOUBLE_EQ(h.median_lo_975, 38.0);  // the 39th: binom.cdf(38, 100, .5) = 0.0105
    // Past 20,000 samples the normal approximation: k = 15000 - 0.98 sqrt(30000) + 0.5 = 14830.
    EXPECT_DOUBLE_EQ(phase_stats(many).median_lo, 14829.0);
    EXPECT_TRUE(std::isnan(phase_stats({1, 2, 3, 4, 5}).median_lo)) << "5 give no 95% interval";
    const PhaseStats one = phase_stats({2.5});
    EXPECT_DOUBLE_EQ(one.p99, 2.5);
    EXPECT_DOUBLE_EQ(one.cv, 0.0);
    EXPECT_TRUE(std::isnan(phase_stats({kNaN, kNaN}).p90));
}

// A merged histogram gives the median's intervals at the ranks the order statistics give: of
// 1..100, the 40th and 61st at 95%, within the buckets' error.
TEST(ReportStatistics, AHistogramsMedianIntervalsAreItsValuesAtTheSameRanks) {
    LogHistogram h;
    std::vector<double> values;
    for (int i = 1; i <= 100; ++i) {
        h.add(i);
        values.push_back(i);
    }
    const PhaseStats exact = phase_stats(values), read = phase_stats(h);
    EXPECT_DOUBLE_EQ(exact.median_lo, 40.0);
    EXPECT_DOUBLE_EQ(exact.median_hi, 61.0);
    EXPECT_NEAR(read.median_lo, 40.0, kError * 40.0);
    EXPECT_NEAR(read.median_hi, 61.0, kError * 61.0);
    EXPECT_NEAR(read.median_lo_975, exact.median_lo_975, kError * exact.median_lo_975);
    EXPECT_NEAR(read.median_hi_975, exact.median_hi_975, kError * exact.median_hi_975);
    EXPECT_TRUE(std::isnan(phase_stats(LogHistogram()).median_lo));
}

// The step's period is its link's last rank's: a producer running ahead with periods of 100 ms
// and more counts in no step figure but the slow steps.
TEST(ReportStatistics, TheStepIsTheLinksLastRanks) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    const PassResult result = pass_result(config, placement.role, [&](std::int64_t, StepTimes& t) {
        if (placement.role == Role::producer) t.period += 90.0;
    });
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    if (world_rank() != 0) return;
    EXPECT_NEAR(p.phase(Phase::step).median, 14.5, kError * 14.5);
    EXPECT_DOUBLE_EQ(p.phase(Phase::step).max, 17.0);
    EXPECT_EQ(p.histograms[index_of(Phase::step)].count(),
              6u * static_cast<unsigned>(placement.pairs));
    EXPECT_EQ(p.slow_steps, world_size() > 1 ? 6 : 0) << "the producer's, over 3x the median";
}

// A period over 3x the median on any rank makes its step slow, counted once.
TEST(ReportStatistics, SlowStepsAreCountedAndNamed) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    const PassResult result = pass_result(config, placement.role, [](std::int64_t s, StepTimes& t) {
        if (s == 1 || s == 5) t.period = 1000.0;  // step 1: warm-up, not timed
        if (s == 6 && world_rank() == 0) t.period = 50.0;
    });
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    const PassSummary plain =
        summarize_pass(MPI_COMM_WORLD, config, placement, pass_result(config, placement.role));
    if (world_rank() != 0) return;
    EXPECT_EQ(p.slow_steps, 2);
    EXPECT_EQ(p.slow_step_numbers, (std::vector<std::int64_t>{5, 6}));
    EXPECT_EQ(plain.slow_steps, 0);
}

// Of ten slow steps, all are counted and the first kSlowStepsKept (8) named.
TEST(ReportStatistics, OnlyTheFirstSlowStepsAreNamed) {
    Config config = small_config();
    config.steps = 40;
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    const PassResult result = pass_result(config, placement.role, [](std::int64_t s, StepTimes& t) {
        if (s >= 10 && s < 20) t.period = 1000.0;
    });
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    if (world_rank() != 0) return;
    EXPECT_EQ(p.slow_steps, 10);
    EXPECT_EQ(p.slow_step_numbers, (std::vector<std::int64_t>{10, 11, 12, 13, 14, 15, 16, 17}));
}

// A resumed pass ran the steps from its first: those are what its checks covered.
TEST(ReportStatistics, AResumedPassCountsTheElementsOfTheStepsItRan) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    PassResult result = pass_result(config, placement.role);
    result.first_step = 3;
    result.timed_from = 4;  // step 3 is its cold step
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    const auto pairs = static_cast<std::uint64_t>(placement.pairs);
    EXPECT_EQ(p.x_checked, 1000u * 5 * pairs);  // steps 3 to 7
    EXPECT_EQ(p.c_checked, 500u * 5 * pairs);
    EXPECT_EQ(p.timed_steps, 4);
}

// The steps that share an end event are counted on the rank that groups the fewest (a consumer's
// written steps end its groups): here the last rank.
TEST(ReportStatistics, GroupedStepsAreTheFewestAnyRankGroups) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    PassResult result = pass_result(config, placement.role);
    result.grouped_steps = 6 - world_rank();
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    EXPECT_EQ(p.grouped_steps, 7 - world_size());
}

// nccl-tests' bus bandwidth factors: 1 for point-to-point and broadcast, 2(n-1)/n for an
// all-reduce over n ranks.
TEST(ReportStatistics, BusFactorsAreNcclTests) {
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::pairs, 1), 1.0);
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::broadcast, 8), 1.0);
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::allreduce, 1), 0.0);
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::allreduce, 2), 1.0);
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::allreduce, 4), 1.5);
    EXPECT_DOUBLE_EQ(bus_factor(Pattern::allreduce, 8), 1.75);
}

// A collective's time per step is the shortest over its group's ranks (each also waits for the
// last to arrive): rank r's receive takes 2 + s + r ms, a broadcast root's send 1 + s ms.
PassSummary collective_pass(Pattern pattern) {
    Config config = small_config();
    config.pattern = pattern;
    const PairPlacement placement = place_groups(
        world_rank(), world_size(), world_size(),
        pattern == Pattern::allreduce ? Collective::allreduce : Collective::broadcast, 256);
    const PassResult r = pass_result(config, placement.role, [&](std::int64_t s, StepTimes& t) {
        if (placement.role != Role::producer) t.recv = 2.0 + static_cast<double>(s + world_rank());
        if (placement.role == Role::producer) t.send = 1.0 + static_cast<double>(s);
    });
    return summarize_pass(MPI_COMM_WORLD, config, placement, r);
}

TEST(ReportStatistics, ACollectiveTakesTheShortestRankOfItsGroup) {
    const PassSummary allreduce = collective_pass(Pattern::allreduce);
    const PassSummary broadcast = collective_pass(Pattern::broadcast);
    if (world_rank() != 0) return;
    // Timed steps 2..7: rank 0's receive, 4..9 ms, median 6.5.
    EXPECT_NEAR(allreduce.transfer_ms, 6.5, kError * 6.5);
    EXPECT_DOUBLE_EQ(allreduce.pairs[0].transfer_gbps, 4000.0 / (allreduce.transfer_ms * 1e6));
    RunSummary run;
    run.config = small_config();
    run.config.pattern = Pattern::allreduce;
    run.group_size = world_size();
    run.passes = {allreduce};
    const PassJudgement j = judge(run).passes[0];
    EXPECT_DOUBLE_EQ(j[PassFig::transfer_rate].value, 4000.0 / (allreduce.transfer_ms * 1e6));
    EXPECT_DOUBLE_EQ(j[PassFig::bus_rate].value, j[PassFig::transfer_rate].value *
                                                     bus_factor(Pattern::allreduce, world_size()));
    ASSERT_EQ(allreduce.pairs.size(), 1u) << "one group";
    EXPECT_DOUBLE_EQ(allreduce.pairs[0].transfer_ms, allreduce.transfer_ms);
    // With two ranks the root only sends, 3..8 ms (median 5.5), shorter than rank 1's receive;
    // alone it receives its own broadcast.
    const double root = world_size() == 1 ? 6.5 : 5.5;
    EXPECT_NEAR(broadcast.transfer_ms, root, kError * root);
}

// A phase's distribution around its median, as of many steps: its intervals a few percent wide.
PhaseStats around(double m) {
    return {m,    0.9 * m,  1.2 * m,  m,        1.05 * m, 1.15 * m,
            0.02, 0.97 * m, 1.03 * m, 0.96 * m, 1.04 * m};
}

// A summary made by hand, the way summarize_pass and summarize_run leave it on rank 0: phases
// of a tenth of a ms each, well within steps of 3 ms (overlap off) and 2 ms (on).
RunSummary hand_summary() {
    RunSummary s;
    s.config = small_config();
    s.config.tag = "a, \"quoted\" tag";
    s.config.output = "/runs/a, b.h5";
    s.backend = "cpu";
    s.transport = "mpi (host memory)";
    s.world_size = 2;
    s.timestamp = "2026-12-01T00:00:00Z";
    s.git_hash = "abc";
    s.ranks = {{"h0", "host CPU", "", "producer", "itself", 0}};
    for (bool overlap : {false, true}) {
        PassSummary p;
        p.overlap = overlap;
        for (std::size_t i = 0; i < kPhaseCount; ++i) {
            p.phases[i] = around(0.1 * static_cast<double>(i + 1) + (overlap ? 0.01 : 0.0));
        }
        p.time_per_step_ms = p.mean_step_ms = overlap ? 2.0 : 3.0;
        p.phases[index_of(Phase::step)] = around(p.time_per_step_ms);
        p.x_checked = 10;
        p.c_checked = 20;
        p.x_mismatches = overlap ? 1 : 0;
        p.spot_checked = 30;
        p.timing = overlap ? "sampled:16" : "phases";
        p.phase_timed_steps = overlap ? 4 : 8;
        s.passes.push_back(p);
    }
    s.overlap_speedup = 1.5;
    s.overlap_ideal_ms = 1.25;
    return s;
}

std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char ch : line) {
        if (ch == '"') {
            quoted = !quoted;
        } else if (ch == ',' && !quoted) {
            cells.push_back(cell);
            cell.clear();
        } else {
            cell += ch;
        }
    }
    cells.push_back(cell);
    return cells;
}

// The header is what scripts/plot and old results files expect: it may only change on purpose.
TEST(ResultsCsv, HeaderIsTheColumnTableInOrder) {
    EXPECT_EQ(results_csv_header(),
              "tag,timestamp,git_hash,world_size,pairs,backend,transport,gpu_name,dtype,elements,"
              "tensor_bytes,steps,warmup,depth,overlap,blocking,graphs,c_elements,c_iterations,"
              "pairing,chunk,time_per_step_ms,step_ms_median,step_ms_min,step_ms_max,steps_per_s,"
              "a_ms,send_ms,recv_ms,c_ms,wait_ms,b_ms,transfer_gbps,aggregate_gbps,a_gbps,b_gbps,"
              "cold_step_ms,time_per_step_no_overlap_ms,overlap_speedup,x_checked,x_mismatches,"
              "c_mismatches,verified,step_bound_ms,overlap_ideal_ms,pattern,group_size,"
              "algbw_gbps,busbw_gbps,timing,phase_timed_steps,ceiling_transfer_ms,"
              "transfer_vs_ceiling,a_vs_copy,b_vs_copy,c_vs_alone,output,slow_steps,slow_pairs,"
              "a_ms_p50,send_ms_p50,recv_ms_p50,c_ms_p50,wait_ms_p50,b_ms_p50,step_ms_p50,"
              "a_ms_p90,send_ms_p90,recv_ms_p90,c_ms_p90,wait_ms_p90,b_ms_p90,step_ms_p90,"
              "a_ms_p99,send_ms_p99,recv_ms_p99,c_ms_p99,wait_ms_p99,b_ms_p99,step_ms_p99,"
              "a_cv,send_cv,recv_cv,c_cv,wait_cv,b_cv,step_cv,step_unstable,"
              "sm_clock_start_mhz,sm_clock_end_mhz,sm_clock_max_mhz,clock_slowdowns,repeat,relay_"
              "stages,relay_slowest_hop_ms,"
              "relay_period_over_slowest_hop,relay_fill_ms,launch,phase_times_readable,"
              "phase_times_unreadable_because,mean_step_ms,withheld,time_per_step_ms_lo,"
              "transfer_gbps_lo,busbw_gbps_lo,aggregate_gbps_lo,overlap_speedup_lo,"
              "time_per_step_ms_hi,transfer_gbps_hi,busbw_gbps_hi,aggregate_gbps_hi,"
              "overlap_speedup_hi");
    EXPECT_EQ(split_csv_line(results_csv_header()).size(), results_csv_columns().size());
}

TEST(ResultsCsv, EachCellSitsUnderItsColumn) {
    const RunSummary s = hand_summary();
    const std::vector<std::string> names = split_csv_line(results_csv_header());
    const std::vector<std::string> cells = split_csv_line(results_csv_row(s));
    ASSERT_EQ(cells.size(), names.size());
    const auto cell = [&](const std::string& name) {
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (names[i] == name) return cells[i];
        }
        ADD_FAILURE() << "no column " << name;
        return std::string();
    };
    EXPECT_EQ(cell("tag"), "a, quoted tag");  // quoted in the file, so its comma stays inside
    EXPECT_EQ(cell("world_size"), "2");
    EXPECT_EQ(cell("transport"), "mpi");
    EXPECT_EQ(cell("steps"), "8");
    // The main (last) pass's phase medians, each under its phase's column.
    for (std::size_t i = 0; i + 1 < kPhaseCount; ++i) {
        EXPECT_EQ(cell(std::string(kPhases[i].name) + "_ms"), "0." + std::to_string(i + 1) + "1");
    }
    EXPECT_EQ(cell("step_ms_median"), "2");
    EXPECT_EQ(cell("step_ms_min"), "1.8");
    EXPECT_EQ(cell("step_ms_max"), "2.4");
    EXPECT_EQ(cell("time_per_step_ms"), "2");
    EXPECT_EQ(cell("time_per_step_ms_lo"), "1.94");
    EXPECT_EQ(cell("time_per_step_ms_hi"), "2.06");
    EXPECT_EQ(cell("time_per_step_no_overlap_ms"), "3");
    EXPECT_EQ(cell("overlap_speedup"), "1.5");
    // The speedup's interval from the passes' 97.5% intervals: 2.88 / 2.08 to 3.12 / 1.92.
    EXPECT_EQ(cell("overlap_speedup_lo"), "1.38462");
    EXPECT_EQ(cell("overlap_speedup_hi"), "1.625");
    EXPECT_EQ(cell("withheld"), "");
    EXPECT_EQ(cell("phase_times_readable"), "true");
    EXPECT_EQ(cell("x_checked"), "20");  // over both passes
    EXPECT_EQ(cell("x_mismatches"), "1");
    EXPECT_EQ(cell("verified"), "failed");
    EXPECT_EQ(cell("overlap_ideal_ms"), "1.25");
    EXPECT_EQ(cell("timing"), "sampled:16");  // the main pass's
    EXPECT_EQ(cell("phase_timed_steps"), "4");
    EXPECT_EQ(cell("output"), "/runs/a, b.h5");  // quoted in the file, as the tag
}

TEST(SummaryJson, PhasesAreTheTableAndTotalsArePerPass) {
    const RunSummary s = hand_summary();
    const nlohmann::json j = nlohmann::json::parse(summary_json(s));
    ASSERT_EQ(j["passes"].size(), 2u);
    const nlohmann::json& on = j["passes"][1];
    ASSERT_EQ(on["phases_ms"].size(), kPhaseCount);
    for (std::size_t i = 0; i + 1 < kPhaseCount; ++i) {
        const nlohmann::json& st = on["phases_ms"][kPhases[i].name];
        const double median = 0.1 * static_cast<double>(i + 1) + 0.01;
        EXPECT_DOUBLE_EQ(st["median"].get<double>(), median);
        EXPECT_DOUBLE_EQ(st["min"].get<double>(), 0.9 * median);
        EXPECT_DOUBLE_EQ(st["median_ci95"][1].get<double>(), 1.03 * median);
        for (const char* key : {"p50", "p90", "p99", "cv"}) EXPECT_TRUE(st.contains(key)) << key;
    }
    // Each figure judged: its value, unit, interval and verdict, and rendered in its field.
    const nlohmann::json& step = on["figures"]["time_per_step_ms"];
    EXPECT_DOUBLE_EQ(step["value"].get<double>(), 2.0);
    EXPECT_EQ(step["unit"], "ms");
    EXPECT_EQ(step["verdict"], "shown");
    EXPECT_DOUBLE_EQ(step["ci95"][0].get<double>(), 1.94);
    EXPECT_DOUBLE_EQ(on["time_per_step_ms"].get<double>(), 2.0);
    EXPECT_EQ(j["figures"]["overlap_speedup"]["verdict"], "shown");
    EXPECT_EQ(j["schema_version"], 3);
    EXPECT_EQ(on["slow_steps"]["count"], 0);
    EXPECT_TRUE(on["slow_steps"]["first"].is_array());
    EXPECT_EQ(on["verification"]["x_mismatches"], 1);
    EXPECT_EQ(on["verification"]["spot_checked"], 30);
    EXPECT_EQ(j["passes"][0]["verification"]["x_mismatches"], 0);
    EXPECT_EQ(j["verified"], false);
    EXPECT_DOUBLE_EQ(j["overlap_speedup"].get<double>(), 1.5);
    const VerificationTotals v = s.verification_totals();
    EXPECT_EQ(v.x_checked, 20u);
    EXPECT_EQ(v.c_checked, 40u);
    EXPECT_EQ(v.spot_checked, 60u);
}

TEST(SummaryJson, NaNIsWrittenAsNull) {
    RunSummary s = hand_summary();
    s.passes[1].phases[index_of(Phase::a)].median = kNaN;
    const nlohmann::json j = nlohmann::json::parse(summary_json(s));
    EXPECT_TRUE(j["passes"][1]["phases_ms"]["a"]["median"].is_null());
}

TEST(ReportText, ListsEveryPhaseOfEveryPass) {
    if (world_rank() != 0) return;
    const RunSummary s = hand_summary();
    char* text = nullptr;
    std::size_t length = 0;
    std::FILE* out = open_memstream(&text, &length);
    print_report(out, s);
    std::fclose(out);
    const std::string report(text, length);
    std::free(text);
    for (const PhaseInfo& phase : kPhases) {
        // A table row: the name padded to 6, as print_report lays it out ("  step   " and not
        // the "  step bound" line).
        std::string row = "\n  " + std::string(phase.name);
        row.resize(std::max<std::size_t>(row.size(), 9), ' ');
        row += ' ';
        std::size_t count = 0;
        for (std::size_t at = report.find(row); at != std::string::npos;
             at = report.find(row, at + 1)) {
            ++count;
        }
        EXPECT_EQ(count, 2u) << phase.name;
    }
    EXPECT_NE(report.find("FAILED"), std::string::npos);
}

std::string report_of(const RunSummary& s, void (*print)(std::FILE*, const RunSummary&)) {
    char* text = nullptr;
    std::size_t length = 0;
    std::FILE* out = open_memstream(&text, &length);
    print(out, s);
    std::fclose(out);
    const std::string report(text, length);
    std::free(text);
    return report;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string fmt_ms(double ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", ms);
    return text;
}

// Issue #26: the report says only what ran, in units that read, and the same memory figure
// once.
TEST(ReportText, SaysOnlyWhatRanInUnitsThatRead) {
    if (world_rank() != 0) return;
    RunSummary s = hand_summary();
    s.passes[1].host_retire_us = 1951057.5;
    s.passes[1].host_queue_us = 82.5;
    s.passes[1].host_callback_us = 3908.8;
    s.passes[1].step_bound_ms = 2.5;
    std::string report = report_of(s, print_report);
    EXPECT_TRUE(has(report,
                    "queueing 82.5 µs, reading back 1.95 s (waits for the host streams), "
                    "stop vote 3.91 ms"))
        << report;
    EXPECT_FALSE(has(report, "waits for the GPU")) << "the CPU path has no GPU";
    EXPECT_FALSE(has(report, "step bound")) << "a figure a step can beat is no bound";
    EXPECT_TRUE(has(report, "step model 2.5000 ms = ")) << report;
    EXPECT_TRUE(has(report, "an estimate")) << report;
    EXPECT_TRUE(has(report, " Giter/s")) << "C ran";
    EXPECT_TRUE(has(report, "(write ")) << "rows were written";
    s.backend = "cuda";
    EXPECT_TRUE(has(report_of(s, print_report), "(waits for the GPU)"));

    s.config.c_iterations = 0;
    s.config.write = WriteMode::none;
    report = report_of(s, print_report);
    EXPECT_FALSE(has(report, "Giter/s")) << "C did not run: " << report;
    EXPECT_FALSE(has(report, "GB/s; the pipeline waited")) << "nothing was written: " << report;
    EXPECT_TRUE(has(report, "write = none")) << report;
}

// Issue #47: the header's config lists the keys set away from their defaults (never a debug_*
// key), wrapped; the memory is one figure.
TEST(ReportText, HeaderListsTheChangedKeysAndGivesOneMemoryFigure) {
    if (world_rank() != 0) return;
    RunSummary s = hand_summary();
    s.device_bytes = 5u << 20;
    s.host_bytes = 3u << 20;
    s.total_bytes = 8u << 20;
    s.config.debug_delay_us = 5;
    s.config.depth = 3;
    const std::string header = report_of(s, print_run_header);
    std::size_t config_lines = 0;
    for (std::size_t begin = 0; begin < header.size();) {
        const std::size_t end = header.find('\n', begin);
        const std::string line = header.substr(begin, end - begin);
        if (line.rfind("config", 0) == 0 || line.rfind("  ", 0) == 0) {
            ++config_lines;
            EXPECT_LE(line.size(), 100u) << line;
        }
        begin = end == std::string::npos ? header.size() : end + 1;
    }
    EXPECT_GT(config_lines, 1u) << header;
    const Config defaults;
    for (const auto& key : config_keys()) {
        const bool changed =
            config_value_toml(s.config, key.name) != config_value_toml(defaults, key.name);
        const bool debug = key.name.substr(0, 6) == "debug_";
        EXPECT_EQ(has(header, " " + std::string(key.name) + "="), changed && !debug) << key.name;
    }
    EXPECT_TRUE(has(header, " depth=3")) << header;
    EXPECT_FALSE(has(header, "debug_")) << "the tests' keys: " << header;
    s.config = Config{};
    EXPECT_TRUE(has(report_of(s, print_run_header), "prints all): none\n"));
    // The CPU path: one host figure, the whole of it, and no separate "host" part to disagree.
    EXPECT_TRUE(has(header, "memory per rank (largest): host 8.00 MiB (")) << header;
    EXPECT_FALSE(has(header, "device ")) << header;
    s.backend = "cuda";
    EXPECT_TRUE(
        has(report_of(s, print_run_header), "memory per rank (largest): device 5.00 MiB ("));
    EXPECT_TRUE(has(report_of(s, print_run_header), "; pinned host 3.00 MiB ("));
}

// A relay's ranks are named by their stage; a resumed run says where it starts.
TEST(ReportText, RelayRanksByStageAndWhereAResumedRunStarts) {
    if (world_rank() != 0) return;
    RunSummary s = hand_summary();
    s.config.pattern = Pattern::relay;
    s.group_size = 3;
    s.ranks = {{"h0", "host CPU", "", "producer", "host memory (CPU path)", 0},
               {"h0", "host CPU", "", "relay", "host memory (CPU path)", 0},
               {"h0", "host CPU", "", "consumer", "host memory (CPU path)", 1}};
    std::string header = report_of(s, print_run_header);
    EXPECT_TRUE(has(header, "rank 1: stage 1 of group 0 (relay) on h0")) << header;
    EXPECT_TRUE(has(header, "rank 2: stage 2 of group 0 (consumer) on h0")) << header;
    EXPECT_FALSE(has(header, "row")) << header;
    EXPECT_FALSE(has(header, "resumed")) << header;
    s.config.overlap = OverlapMode::compare;
    s.resumed_step = 5;
    s.resumed_pass = 1;
    header = report_of(s, print_run_header);
    EXPECT_TRUE(has(header,
                    "resumed: from step 5 of the overlap=on pass (2 of 2) of /runs/a, "
                    "b.h5.partial"))
        << header;
}

// The progress line counts the passes (and sizes) rather than their steps together.
TEST(Progress, SaysTheSizePassAndStep) {
    EXPECT_EQ(progress_place(24, 12, {false, true}, 1), "pass 2 of 2 (overlap=on), step 12 of 12");
    EXPECT_EQ(progress_place(13, 12, {false, true}, 1), "pass 2 of 2 (overlap=on), step 1 of 12");
    EXPECT_EQ(progress_place(12, 12, {false, true}, 1), "pass 1 of 2 (overlap=off), step 12 of 12");
    EXPECT_EQ(progress_place(30, 12, {true}, 3), "size 3 of 3, overlap=on pass, step 6 of 12");
    EXPECT_EQ(progress_place(0, 12, {true}, 1), "overlap=on pass, step 0 of 12");
}

// Sets a phase's median and its intervals, as of many steps.
void set_median(PassSummary& p, Phase phase, double median) {
    PhaseStats& st = p.phases[index_of(phase)];
    const PhaseStats like = around(median);
    st.median = median;
    st.median_lo = like.median_lo;
    st.median_hi = like.median_hi;
}

// Issue #32: a compare run on an oversubscribed CPU path (10 working threads on 2 cores) whose
// phase medians cannot explain the step: made-up medians whose attribution terms cancel (C far
// slower than alone, the rest as far negative), a step model the step beats 2x, a transfer longer
// than its own step, C's median above its step's.
RunSummary contradicting_summary() {
    RunSummary s = hand_summary();
    s.ranks = {
        {"vm", "host CPU", "", "producer", "host memory (CPU path)", 0, "0-1", "0", "", 2, 5},
        {"vm", "host CPU", "", "consumer", "host memory (CPU path)", 0, "0-1", "0", "", 2, 5}};
    s.ceilings = {true, 0.09, 0.1, 0.1, 3.9, 80.0};
    for (PassSummary& p : s.passes) {
        set_median(p, Phase::a, 0.3);
        set_median(p, Phase::b, 0.5);
        set_median(p, Phase::c, p.overlap ? 13.1 : 4.0);
        p.phases[index_of(Phase::step)] = {8.0,  0.6, 27.0, 8.0, 20.0, 26.0,
                                           0.43, 7.5, 8.5,  7.4, 8.6};
        p.transfer_ms = 9.0;  // longer than the step's median period: waiting, not moving
        p.time_per_step_ms = 8.0;
        p.step_bound_ms = 17.5;
    }
    s.overlap_speedup = 1.0;
    s.overlap_ideal_ms = 9.3;
    return s;
}

// A healthy compare run: every ceiling ratio under 1, the step models explain their steps, the
// attribution adds up with "the rest" under a quarter, every phase within its step.
RunSummary healthy_summary() {
    RunSummary s = contradicting_summary();
    s.ranks[0].host_threads = s.ranks[1].host_threads = 1;
    for (PassSummary& p : s.passes) {
        p.transfer_ms = 0.1;
        p.step_bound_ms = 4.6;
        p.time_per_step_ms = p.overlap ? 13.5 : 8.0;
        p.phases[index_of(Phase::step)] = around(p.time_per_step_ms);
    }
    set_median(s.passes.back(), Phase::c, 12.0);
    s.overlap_speedup = 8.0 / 13.5;
    return s;
}

// Whether a text shows a negative figure ("-4.2", " -0.1"): a time or a count never is.
bool shows_a_negative_figure(const std::string& text) {
    for (std::size_t at = text.find('-'); at != std::string::npos; at = text.find('-', at + 1)) {
        const bool after_space = at == 0 || text[at - 1] == ' ' || text[at - 1] == '(';
        if (after_space && at + 1 < text.size() && std::isdigit(text[at + 1])) return true;
    }
    return false;
}

// Issues #32, #47 and #51: where the phase times cannot be read the report says so once, prints
// no phase table and no rate (aggregate included), and keeps the time per step with its
// interval, the stability, the speedup and verification; the JSON keeps every value beside its
// verdict, the CSV renders the verdict.
TEST(ReportReading, AnUnreadableRunShowsNoPhaseTableAndNoRate) {
    if (world_rank() != 0) return;
    const RunSummary s = contradicting_summary();
    const Judgement j = judge(s);
    EXPECT_EQ(j.codes(), "oversubscribed;beats_model;transfer_waiting;phase_above_step");
    const std::string report = report_of(s, print_report);
    std::size_t said = 0;
    for (std::size_t at = report.find("phase times: cannot be read here (");
         at != std::string::npos; at = report.find("phase times: cannot be read here (", at + 1)) {
        ++said;
    }
    EXPECT_EQ(said, 1u) << report;
    EXPECT_TRUE(has(report, "10 busy threads on 2 cores of vm (CPU path)")) << report;
    EXPECT_TRUE(has(report, "the overlap=off step beats its step model 2.19x")) << report;
    EXPECT_TRUE(has(report, "the raw figures are in the JSON summary")) << report;
    for (const char* withheld :
         {"GB/s", "Giter/s", "  phase ", "  transfer ", "against this launch's ceilings",
          "step model", "perfect overlap:", "overlap, attributed", "not attributed"}) {
        EXPECT_FALSE(has(report.substr(report.find("\noverlap=off")), withheld)) << withheld << "\n"
                                                                                 << report;
    }
    for (const char* kept :
         {"time per step 8.000 [7.500, 8.500] ms (the median period; mean", "  stability: UNSTABLE",
          "overlap speedup: 1.00× [0.86, 1.16], no "
          "measurable difference",
          "verification: ", "output: "}) {
        EXPECT_TRUE(has(report, kept)) << kept << "\n" << report;
    }
    EXPECT_TRUE(has(report,
                    "  both passes are UNSTABLE, and the phase times cannot be read: one launch "
                    "cannot settle it; scripts/sweep --repeat 6, then scripts/compare\n"))
        << report;
    EXPECT_FALSE(shows_a_negative_figure(report)) << report;
    // Every value stays in the JSON, each withheld figure rendered as null.
    const nlohmann::json js = nlohmann::json::parse(summary_json(s));
    EXPECT_EQ(js["phase_times"]["readable"], false);
    EXPECT_EQ(js["phase_times"]["reasons"][0], "oversubscribed");
    const nlohmann::json& on = js["passes"][1];
    EXPECT_TRUE(on["step_bound_ms"].is_null());
    EXPECT_DOUBLE_EQ(on["figures"]["step_bound_ms"]["value"].get<double>(), 17.5);
    EXPECT_EQ(on["figures"]["step_bound_ms"]["verdict"], "withheld");
    EXPECT_EQ(on["figures"]["transfer_gbps"]["reason"], "oversubscribed");
    EXPECT_TRUE(on["aggregate_gbps"].is_null());
    EXPECT_TRUE(js["overlap_ideal_ms"].is_null());
    EXPECT_DOUBLE_EQ(js["figures"]["overlap_ideal_ms"]["value"].get<double>(),
                     j[RunFig::perfect_overlap].value);
    const std::vector<std::string> names = split_csv_line(results_csv_header());
    const std::vector<std::string> cells = split_csv_line(results_csv_row(s));
    ASSERT_EQ(names.size(), cells.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].find("gbps") != std::string::npos || names[i] == "a_ms" ||
            names[i] == "c_ms_p99" || names[i] == "step_bound_ms")
            EXPECT_EQ(cells[i], "") << names[i] << " is withheld";
        if (names[i] == "phase_times_unreadable_because") EXPECT_EQ(cells[i], j.codes());
        if (names[i] == "step_ms_median") EXPECT_EQ(cells[i], "8") << "the step's period stands";
    }
}

// A healthy run shows every figure.
TEST(ReportReading, AHealthyRunShowsEveryFigure) {
    if (world_rank() != 0) return;
    const RunSummary healthy = healthy_summary();
    const Judgement j = judge(healthy);
    EXPECT_TRUE(j.readable()) << j.text();
    for (const PassJudgement& p : j.passes) {
        for (std::size_t i = 0; i < kPassFigCount; ++i) {
            EXPECT_EQ(p.figures[i].reason(), std::string()) << figure_name(PassFig(i)).name;
        }
    }
    const std::string report = report_of(healthy, print_report);
    for (const char* shown : {"against this launch's ceilings", "step model 4.6000 ms",
                              "perfect overlap: ", "overlap, attributed: ", "transfer 0.1000 ms",
                              " GB/s", "overlap speedup: 0.59× ["}) {
        EXPECT_TRUE(has(report, shown)) << shown << "\n" << report;
    }
    EXPECT_FALSE(has(report, "phase times: cannot be read")) << report;
    EXPECT_FALSE(has(report, "one launch cannot settle it")) << report;
    EXPECT_FALSE(shows_a_negative_figure(report)) << report;
    const OverlapAttribution a = attribute_overlap(healthy);
    EXPECT_TRUE(has(
        report, "overlap, attributed: step 13.5000 ms = perfect overlap " + fmt_ms(a.perfect_ms)))
        << report;
    EXPECT_TRUE(has(report, "perfect overlap: " + fmt_ms(a.perfect_ms) + " ms per step")) << report;
}

// Each rule of the table, planted alone in a healthy run: the code it gives, and the figure it
// withholds (or, for the speedup's notes, is said beside). Every rule has its case here.
struct Plant {
    const char* code;
    void (*plant)(RunSummary&);
    bool pass_figure;  // which figure it acts on: the main pass's or the run's
    std::size_t figure;
};
const Plant kPlants[] = {
    {"oversubscribed", [](RunSummary& s) { s.ranks[0].host_threads = s.ranks[1].host_threads = 5; },
     true, std::size_t(PassFig::a_rate)},
    // C 1.06x as fast as alone is over the tolerance (1.04x is noise, below).
    {"beats_ceiling", [](RunSummary& s) { set_median(s.passes.front(), Phase::c, 3.9 / 1.06); },
     true, std::size_t(PassFig::c_vs_alone)},
    {"beats_model", [](RunSummary& s) { s.passes.front().step_bound_ms = 16.0; }, true,
     std::size_t(PassFig::step_model)},
    {"transfer_waiting", [](RunSummary& s) { s.passes.back().transfer_ms = 14.0; }, true,
     std::size_t(PassFig::transfer_rate)},
    // Overlap made the step slower, yet the overlapped step beats perfect overlap (4.4 ms).
    {"overlap_contradiction",
     [](RunSummary& s) {
         s.passes.back().time_per_step_ms = 4.0;
         s.passes.back().phases[index_of(Phase::step)] = around(4.0);
         s.passes.front().time_per_step_ms = 3.8;
         s.passes.front().phases[index_of(Phase::step)] = around(3.8);
         s.overlap_speedup = 3.8 / 4.0;
         set_median(s.passes.back(), Phase::c, 3.9);
     },
     false, std::size_t(RunFig::perfect_overlap)},
    // The overlap=off step of 0.42 ms beside a C of 4.78 ms at the least.
    {"step_below_phase",
     [](RunSummary& s) { s.passes.front().phases[index_of(Phase::step)].min = 0.42; }, true,
     std::size_t(PassFig::b_rate)},
    // The overlap=off B median above its step's.
    {"phase_above_step", [](RunSummary& s) { set_median(s.passes.front(), Phase::b, 9.0); }, true,
     std::size_t(PassFig::aggregate_rate)},
    {"no_transfer", [](RunSummary& s) { s.config.launch = Launch::device; }, true,
     std::size_t(PassFig::transfer_rate)},
    // Without ceilings a rate is held to 20,000 GB/s: a 4000-byte tensor in 0.1 ns.
    {"above_ceiling",
     [](RunSummary& s) {
         s.ceilings = {};
         s.passes.back().transfer_ms = 1e-7;
     },
     true, std::size_t(PassFig::transfer_rate)},
    {"not_explained", [](RunSummary& s) { set_median(s.passes.back(), Phase::c, 5.0); }, false,
     std::size_t(RunFig::attributed_step)},
    {"few_steps",
     [](RunSummary& s) { s.passes.front().phases[index_of(Phase::step)].median_lo_975 = kNaN; },
     false, std::size_t(RunFig::speedup)},
    {"unstable_pass", [](RunSummary& s) { s.passes.back().phases[index_of(Phase::step)].p90 = 20; },
     false, std::size_t(RunFig::speedup)},
    {"phases_unreadable",
     [](RunSummary& s) { s.ranks[0].host_threads = s.ranks[1].host_threads = 5; }, false,
     std::size_t(RunFig::speedup)},
    {"no_difference",
     [](RunSummary& s) {
         s.passes.back().phases[index_of(Phase::step)] = around(8.2);
         s.passes.back().time_per_step_ms = 8.2;
         s.overlap_speedup = 8.0 / 8.2;
         set_median(s.passes.back(), Phase::c, 7.0);
     },
     false, std::size_t(RunFig::speedup)},
};

TEST(ReportReading, EachRuleWithholdsWhatItNames) {
    if (world_rank() != 0) return;
    for (const Rule& r : judgement_rules()) {
        const auto plant =
            std::find_if(std::begin(kPlants), std::end(kPlants),
                         [&](const Plant& p) { return r.code == std::string(p.code); });
        ASSERT_NE(plant, std::end(kPlants)) << "no case planted for the rule " << r.code;
        RunSummary s = healthy_summary();
        plant->plant(s);
        const Judgement j = judge(s);
        const Figure& f =
            plant->pass_figure ? j.passes.back().figures[plant->figure] : j.run[plant->figure];
        std::vector<std::string> notes;
        for (const Finding& note : j.speedup_notes) notes.push_back(note.rule->code);
        if (std::string(r.withholds).rfind("nothing", 0) == 0) {
            EXPECT_TRUE(f.shown()) << r.code;
            EXPECT_NE(std::find(notes.begin(), notes.end(), r.code), notes.end()) << r.code;
            continue;
        }
        EXPECT_TRUE(f.measured()) << r.code;
        EXPECT_EQ(f.reason(), std::string(r.code)) << f.why;
        EXPECT_FALSE(f.why.empty()) << r.code;
        if (r.finding != nullptr) EXPECT_EQ(j.codes(), r.code) << j.text();
        // Withheld means not shown: the report carries no figure of it.
        const std::string report = report_of(s, print_report);
        EXPECT_FALSE(shows_a_negative_figure(report)) << r.code << "\n" << report;
        if (r.code == std::string("above_ceiling")) {
            EXPECT_TRUE(has(report,
                            "transfer 0.000000100 ms (no rate: transfer_gbps is above "
                            "its ceiling, 2e+04 GB/s)"))
                << report;
        }
    }
    RunSummary s = healthy_summary();
    set_median(s.passes.front(), Phase::c, 3.9 / 1.04);
    EXPECT_TRUE(judge(s).readable()) << "4% faster than alone is noise: " << judge(s).text();
}

// Every rule of the table is documented once, a row of OUTPUT.md's table of rules.
TEST(ReportReading, OutputMdListsEveryRuleOnce) {
    std::ifstream in(GPURELAY_OUTPUT_MD);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << GPURELAY_OUTPUT_MD;
    for (const Rule& r : judgement_rules()) {
        const std::string row = "\n| `" + std::string(r.code) + "` | ";
        EXPECT_NE(text.find(row), std::string::npos) << r.code << " is not in OUTPUT.md";
        EXPECT_EQ(text.find(row), text.rfind(row)) << r.code << " is in OUTPUT.md twice";
    }
}

// launch = "device" (issue #51's 399 TB/s): A writes into the peer's slot, so no transfer
// bandwidth anywhere; the hand-off a latency in µs, A's rate the rate the tensor reaches the
// peer; no transfer waiting on a phase that does not exist.
TEST(ReportReading, ADeviceDrivenStepHasAHandOffAndNoTransferRate) {
    if (world_rank() != 0) return;
    RunSummary s = healthy_summary();
    s.config.launch = Launch::device;
    s.ceilings = {};
    for (PassSummary& p : s.passes) {
        p.transfer_ms = 0.00067;  // the publish of the arrival word
        p.pairs = {{0, 0, 1, p.time_per_step_ms, p.transfer_ms, 4000 / (p.transfer_ms * 1e6)}};
    }
    s.passes.back().transfer_ms = 20.0;  // longer than its step: no "waiting" for launch = device
    const Judgement j = judge(s);
    EXPECT_TRUE(j.readable()) << j.text();
    const PassJudgement& off = j.passes.front();
    EXPECT_EQ(off[PassFig::transfer_rate].reason(), std::string("no_transfer"));
    EXPECT_EQ(off.links[0].reason(), std::string("no_transfer"));
    EXPECT_TRUE(off[PassFig::handoff].shown());
    EXPECT_DOUBLE_EQ(off[PassFig::handoff].value, 0.67);
    const std::string report = report_of(s, print_report);
    EXPECT_TRUE(has(report, "hand-off 0.6700 µs (A writes straight into the peer's slot"))
        << report;
    EXPECT_TRUE(has(report, "; A reaches the peer at ")) << report;
    EXPECT_FALSE(has(report, "  transfer ")) << report;
    EXPECT_FALSE(has(report, "waiting")) << report;
    const nlohmann::json js = nlohmann::json::parse(summary_json(s));
    for (const nlohmann::json& pass : js["passes"]) {
        EXPECT_TRUE(pass["transfer_gbps"].is_null());
        EXPECT_TRUE(pass["busbw_gbps"].is_null());
        EXPECT_TRUE(pass["pairs"][0]["transfer_gbps"].is_null());
        EXPECT_EQ(pass["pairs"][0]["withheld"], "no_transfer");
    }
}

// Ranks bound to a core each (mpirun's default binding): the host's cores are the union of
// theirs, not the most any one of them may use.
TEST(ReportTrust, HostCoresAreTheRanksUnion) {
    if (world_rank() != 0) return;
    RunSummary s = contradicting_summary();
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        s.ranks[r].cores = std::to_string(r);
        s.ranks[r].core_count = 1;
    }
    std::vector<HostLoad> loads = oversubscribed_hosts(s);
    ASSERT_EQ(loads.size(), 1u);
    EXPECT_EQ(loads[0].cores, static_cast<int>(s.ranks.size()));
    // Both ranks on the same core: one core.
    for (RankInfo& r : s.ranks) r.cores = "1";
    loads = oversubscribed_hosts(s);
    ASSERT_EQ(loads.size(), 1u);
    EXPECT_EQ(loads[0].cores, 1);
}

// A GPU-path rank with more working threads than the cores it is bound to (the staged MPI
// transport's proxies beside its main thread, one core each as mpirun binds 2 ranks) is named
// as a cause, and the binding advised gives a core per thread; on one core and one thread the
// advice stays a core per rank.
TEST(ReportTrust, RanksWithFewerCoresThanThreadsAreNamed) {
    if (world_rank() != 0) return;
    RunSummary s = contradicting_summary();
    s.backend = "cuda";
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        s.ranks[r].cores = std::to_string(r);
        s.ranks[r].core_count = 1;
        s.ranks[r].host_threads = r == 0 ? 3 : 5;
        s.ranks[r].peer_link = "same GPU, shared through MPS";
    }
    const CrowdedRanks crowded = crowded_ranks(s);
    EXPECT_EQ(crowded.ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(crowded.most_threads, 5);
    EXPECT_EQ(crowded.fewest_cores, 1);
    EXPECT_EQ(binding_command(s), "mpirun --map-by numa:PE=5 --bind-to core");
    const std::string report = report_of(s, print_report);
    EXPECT_TRUE(has(report, "    likely: ranks 0 and 1 have up to 5 working threads on 1 core"))
        << report;
    EXPECT_TRUE(has(report,
                    "to steady it: bind ranks to cores near their GPU (mpirun --map-by "
                    "numa:PE=5 --bind-to core)"))
        << report;
    EXPECT_TRUE(has(report_of(s, print_run_header),
                    "note: ranks 0 and 1 have up to 5 working threads on 1 core (main thread"))
        << "the header says it whether or not the step is unstable";
    // A core per thread: nothing to name, and a core per rank is the advice.
    for (RankInfo& r : s.ranks) r.host_threads = 1;
    EXPECT_TRUE(crowded_ranks(s).ranks.empty());
    EXPECT_EQ(binding_command(s), "mpirun --bind-to core --map-by numa");
    EXPECT_FALSE(has(report_of(s, print_run_header), "working threads on")) << "none crowded";
    // The CPU path's oversubscribed host is said once, as a host, not again rank by rank.
    s = contradicting_summary();
    EXPECT_EQ(oversubscribed_hosts(s).size(), 1u);
    EXPECT_TRUE(crowded_ranks(s).ranks.empty());
}

TEST(ReportTrust, StabilityAndPlacementLines) {
    if (world_rank() != 0) return;
    RunSummary s = contradicting_summary();
    std::string report = report_of(s, print_report);
    // The verdict with the one figure it is judged by: the cv and the max are the table's.
    EXPECT_TRUE(has(report,
                    "  stability: UNSTABLE, the step period's p90 2.50x its median (over "
                    "1.10x); slow steps (a period over 3x the median): 0\n"))
        << report;
    EXPECT_FALSE(has(report, "stability: step period")) << report;
    // The likely causes once, not again for the second unstable pass.
    EXPECT_EQ(report.find("    likely: "), report.rfind("    likely: ")) << report;
    EXPECT_TRUE(has(report, "    likely: 10 threads of 2 rank(s) on 2 cores of vm (CPU path)"))
        << report;
    // Binding cannot give the host more cores: the advice is a core for each thread.
    EXPECT_TRUE(has(report,
                    "to steady it: a core for each working thread (fewer ranks on vm, or "
                    "10 cores); more steps"))
        << report;
    EXPECT_FALSE(has(report, "bind ranks")) << report;
    EXPECT_TRUE(has(report, "scripts/sweep --repeat N, then scripts/compare")) << report;
    const std::string header = report_of(s, print_run_header);
    EXPECT_TRUE(has(header, "to its peer: host memory (CPU path); cores 0-1 (NUMA node 0)\n"))
        << header;
    // A rank away from its GPU's node, and two ranks time-sliced on one GPU, said plainly.
    s.backend = "cuda";
    for (RankInfo& r : s.ranks) {
        r.bus_id = "0000:01:00.0";
        r.peer_link = "same GPU, time-sliced";
        r.gpu_numa = "1";
    }
    const std::string cuda_header = report_of(s, print_run_header);
    EXPECT_TRUE(has(cuda_header, "cores 0-1 (NUMA node 0), its GPU on NUMA node 1: WARNING"))
        << cuda_header;
    EXPECT_TRUE(has(cuda_header,
                    "note: ranks 0 and 1 share GPU vm 0000:01:00.0 without MPS: the figures "
                    "measure the driver switching between the 2 processes"))
        << cuda_header;
    EXPECT_TRUE(has(report_of(s, print_report), "GPU clock: not measured")) << "no NVML here";
    EXPECT_EQ(range_list_text({0, 1, 2, 3, 7, 16, 17}), "0-3,7,16-17");
}

// The SM clock, where it is measured: more than 5% down over the timed steps is a likely cause
// of an unstable step, 4% is not.
TEST(ReportTrust, AClockThatFellIsALikelyCause) {
    if (world_rank() != 0) return;
    RunSummary s = contradicting_summary();
    const auto report_with_clock_at = [&s](double end_mhz) {
        for (PassSummary& p : s.passes) {
            p.clocks_measured = true;
            p.sm_clock_start_mhz = p.sm_clock_max_mhz = 1980;
            p.sm_clock_end_mhz = end_mhz;
        }
        return report_of(s, print_report);
    };
    const std::string fell = report_with_clock_at(1800);
    EXPECT_TRUE(has(fell, "the SM clock went 1980 -> 1800 MHz")) << fell;
    const std::string held = report_with_clock_at(1900);
    EXPECT_FALSE(has(held, "the SM clock went")) << held;
}

// Ranks named in a line: three by name, four or more as ranges.
TEST(ReportTrust, ThreeRanksByNameFourAsARange) {
    if (world_rank() != 0) return;
    for (const std::size_t ranks : {3u, 4u}) {
        RunSummary s = contradicting_summary();
        s.backend = "cuda";
        s.world_size = static_cast<int>(ranks);
        s.ranks.resize(ranks, s.ranks.front());
        for (std::size_t r = 0; r < ranks; ++r) {
            s.ranks[r].cores = std::to_string(r);
            s.ranks[r].core_count = 1;
            s.ranks[r].host_threads = 5;
        }
        const std::string header = report_of(s, print_run_header);
        EXPECT_TRUE(has(header, ranks == 3 ? "note: ranks 0, 1 and 2 have up to 5 working threads"
                                           : "note: ranks 0-3 have up to 5 working threads"))
            << header;
    }
}

// Issue #42: a run of `pairs` made-up pairs on GPUs, 8 ranks to a host: pair i moves its tensor
// in 1 + i/1000 ms, but five slow ones; every step takes 10 ms, pair 7's 12.
RunSummary many_pairs(int pairs) {
    RunSummary s = healthy_summary();
    s.ceilings = {};  // the made-up links are far faster than healthy_summary's copy
    s.backend = "cuda";
    s.world_size = 2 * pairs;
    s.pairs = pairs;
    s.ranks.clear();
    for (int r = 0; r < 2 * pairs; ++r) {
        s.ranks.push_back({"node" + std::to_string(r / 8), "GPU",
                           "0000:0" + std::to_string(r % 8) + ":00.0",
                           r % 2 == 0 ? "producer" : "consumer", "NVLink", r / 2,
                           std::to_string(r % 8), "0", "0", 1, 1});
    }
    for (PassSummary& p : s.passes) {
        p.pairs.clear();
        for (int i = 0; i < pairs; ++i) {
            const double transfer = 1.0 + i / 1000.0;
            p.pairs.push_back(
                {i, 2 * i, 2 * i + 1, i == 7 ? 12.0 : 10.0, transfer, 1.0 / transfer});
        }
        // Slowest first: 3, 250 (when there), 99, 42, 17.
        for (const auto& [pair, ms] : std::vector<std::pair<int, double>>{
                 {3, 3.0}, {250, 2.9}, {99, 2.5}, {42, 2.0}, {17, 1.9}}) {
            if (pair < pairs) p.pairs[static_cast<std::size_t>(pair)].transfer_ms = ms;
        }
        for (PairFigures& f : p.pairs) {
            f.transfer_gbps = 1.0 / f.transfer_ms;
            f.slow = f.transfer_ms > 1.1 * 1.2 || f.step_ms > 11.0;
        }
    }
    return s;
}

std::size_t lines_of(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(ReportAtScale, ThePairsSpreadIsTheirMedianMinMaxAndTheSlowest) {
    const std::vector<PairFigures> links = many_pairs(300).passes.back().pairs;
    const LinkSpread spread = link_spread(links);
    std::vector<double> transfers;
    for (const PairFigures& f : links) transfers.push_back(f.transfer_ms);
    std::sort(transfers.begin(), transfers.end());
    EXPECT_EQ(spread.count, 300u);
    EXPECT_DOUBLE_EQ(spread.transfer.median, 0.5 * (transfers[149] + transfers[150]));
    EXPECT_DOUBLE_EQ(spread.transfer.min, 1.0);
    EXPECT_DOUBLE_EQ(spread.transfer.max, 3.0);
    EXPECT_DOUBLE_EQ(spread.step.max, 12.0);
    EXPECT_EQ(spread.slowest, (std::vector<std::size_t>{3, 250, 99, 42, 17}));
    EXPECT_EQ(spread.flagged, 6u) << "the five slow transfers and pair 7's step";
}

// Hundreds of ranks and pairs: the header and the report as long as at 16 ranks, the slowest
// named with their ranks, hosts and link, the median, min and max as link_spread has them.
TEST(ReportAtScale, TheReportKeepsItsLengthAndNamesTheSlowest) {
    if (world_rank() != 0) return;
    const RunSummary big = many_pairs(300), small = many_pairs(8);
    const std::string header = report_of(big, print_run_header);
    const std::string report = report_of(big, print_report);
    EXPECT_EQ(lines_of(header), lines_of(report_of(small, print_run_header))) << header;
    EXPECT_EQ(lines_of(report), lines_of(report_of(small, print_report))) << report;
    EXPECT_LE(lines_of(header) + lines_of(report), 60u) << header << report;
    EXPECT_TRUE(has(header,
                    "ranks: 600 = 75 host(s) x 8 rank(s) x 8 GPU(s); hosts (ranks): "
                    "node0 (8), node1 (8), node10 (8), node11 (8) and 71 others; roles: "
                    "consumer (300), producer (300)\n"))
        << header;
    EXPECT_FALSE(has(header, "rank 7:")) << header;
    EXPECT_TRUE(has(report, "  300 pairs (one a line up to 7): transfer median 1.1535 ms, "))
        << report;
    EXPECT_TRUE(has(report,
                    ", min 1.0000 (pair 0), max 3.0000 (pair 3); step median 10.0000 ms, "
                    "min 10.0000 (pair 0), max 12.0000 (pair 7)\n"))
        << report;
    EXPECT_TRUE(has(report,
                    "  the 5 slowest; 6 of 300 flagged SLOW (over 10% slower than the "
                    "median pair):\n"))
        << report;
    // In order, each with its ranks, their hosts and the link.
    std::size_t at = 0;
    for (const char* line :
         {"    pair 3: rank 6 (node0 GPU 0000:06:00.0) -> rank 7 (node0 GPU 0000:07:00.0) over "
          "NVLink: 0.33 GB/s, step 10.0000 ms (transfer 3.0000 ms)  SLOW\n",
          "    pair 250: rank 500 (node62 GPU", "    pair 99: rank 198 (node24 GPU",
          "    pair 42: rank 84 (node10 GPU", "    pair 17: rank 34 (node4 GPU"}) {
        const std::size_t found = report.find(line, at);
        EXPECT_NE(found, std::string::npos) << line << "\n" << report;
        at = found == std::string::npos ? at : found;
    }
    // Up to 7 pairs, one line each; past 4 ranks the header summarises them.
    const RunSummary seven = many_pairs(7);
    EXPECT_TRUE(has(report_of(seven, print_report), "  pair 6: rank 12 (node1 GPU"));
    EXPECT_TRUE(has(report_of(many_pairs(2), print_run_header), "rank 3: pair 1 consumer on"));
}

// Placement warnings at any count: one line each kind, the ranks as ranges.
TEST(ReportAtScale, PlacementWarningsAreGrouped) {
    if (world_rank() != 0) return;
    RunSummary s = many_pairs(64);
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        s.ranks[r].bus_id = "0000:0" + std::to_string(r / 2 % 4) + ":00.0";  // a pair a GPU
        s.ranks[r].gpu_numa = r < 32 ? "1" : "0";
        s.ranks[r].peer_link = "same GPU, time-sliced";
    }
    // Unstable steps, whose likely causes the report names.
    for (PassSummary& p : s.passes) p.phases[index_of(Phase::step)].p90 = 2 * p.time_per_step_ms;
    const std::string header = report_of(s, print_run_header);
    std::size_t notes = 0;
    for (std::size_t at = header.find("\nnote: "); at != std::string::npos;
         at = header.find("\nnote: ", at + 1)) {
        ++notes;
    }
    EXPECT_EQ(notes, 2u) << header;
    EXPECT_TRUE(has(header,
                    "note: 64 GPUs are each shared by 2 ranks (ranks 0 and 1 share GPU "
                    "node0 0000:00:00.0, ...) without MPS: "))
        << header;
    EXPECT_TRUE(has(header,
                    "note: ranks 0-31 run on other NUMA nodes than their GPUs' (rank 0 on "
                    "node 0, its GPU on 1): their copies cross the socket link"))
        << header;
    const std::string report = report_of(s, print_report);
    EXPECT_TRUE(has(report,
                    "    likely: 64 GPUs are each shared by 2 ranks (ranks 0 and 1 share "
                    "GPU node0 0000:00:00.0, ...) time-sliced; ranks 0-31 run on other "
                    "NUMA nodes"))
        << report;
}

// Every rank and every link of every pass in the CSV's side tables, joined to the run's row.
TEST(ResultsCsv, SideTablesHoldEveryRankAndLink) {
    if (world_rank() != 0) return;
    char folder[] = "/tmp/report_test_XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    const std::string csv = std::string(folder) + "/study.csv";
    const RunSummary s = many_pairs(20);
    append_results_csv(csv, {s});
    append_results_csv(csv, {s});
    const auto lines = [](const std::string& path) {
        std::ifstream in(path);
        std::vector<std::string> all;
        for (std::string line; std::getline(in, line);) all.push_back(line);
        return all;
    };
    EXPECT_EQ(side_table_path(csv, false), std::string(folder) + "/study.ranks.csv");
    const std::vector<std::string> ranks = lines(side_table_path(csv, false));
    const std::vector<std::string> links = lines(side_table_path(csv, true));
    ASSERT_EQ(ranks.size(), 1 + 2 * 40u);
    ASSERT_EQ(links.size(), 1 + 2 * 2 * 20u);
    EXPECT_EQ(ranks[0].rfind("tag,timestamp,git_hash,elements,repeat,rank,host,", 0), 0u);
    EXPECT_EQ(split_csv_line(ranks[40])[5], "39");
    EXPECT_EQ(split_csv_line(ranks[40])[6], "node4");
    const std::vector<std::string> header = split_csv_line(links[0]);
    const std::vector<std::string> row = split_csv_line(links[2 * 20]);  // the on pass's last
    ASSERT_EQ(row.size(), header.size());
    EXPECT_EQ(row[0], "a, quoted tag");
    EXPECT_EQ(row[5], "on");
    EXPECT_EQ(row[6], "19");
    EXPECT_EQ(row[7], "38");
    EXPECT_EQ(row[9], "node4");
    EXPECT_EQ(row[11], "NVLink");
    // A side table under other columns is refused before the run, as the CSV is.
    std::ofstream(side_table_path(csv, true)) << "other,columns\n1,2\n";
    EXPECT_THROW(check_results_csv_header(csv), Error);
    std::remove(side_table_path(csv, true).c_str());
    std::remove(side_table_path(csv, false).c_str());
    std::remove(csv.c_str());
    ::rmdir(folder);
}

}  // namespace
}  // namespace gpurelay

// The progress line is redrawn in place only on a terminal with no launcher around it.
TEST(Progress, InPlaceOnlyAloneOnATerminal) {
    const char* variables[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_JOB_ID"};
    std::vector<std::pair<std::string, std::string>> saved;
    for (const char* variable : variables) {
        if (const char* value = std::getenv(variable)) saved.emplace_back(variable, value);
        ::unsetenv(variable);
    }
    EXPECT_TRUE(gpurelay::progress_in_place(true));
    EXPECT_FALSE(gpurelay::progress_in_place(false));
    for (const char* variable : variables) {
        ::setenv(variable, "1", 1);
        EXPECT_FALSE(gpurelay::progress_in_place(true)) << variable;
        ::unsetenv(variable);
    }
    for (const auto& [variable, value] : saved) ::setenv(variable.c_str(), value.c_str(), 1);
}
