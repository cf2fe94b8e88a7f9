// The report: the cross-rank statistics of a pass (under mpirun -np 1 and 2), the step bound it
// is held against, and the CSV and JSON, each made from one table.
#include "report/report.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/step_bound.hpp"
#include "report/progress.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

PassResult pass_result(const Config& config, Role role) {
    PassResult r;
    r.overlap = true;
    r.end_step = config.steps;
    r.timed_from = config.warmup;
    for (std::int64_t s = 0; s < config.steps; ++s) r.steps.push_back(times_of(s, role));
    r.x_mismatches.assign(static_cast<std::size_t>(config.steps), 0);
    r.c_mismatches.assign(static_cast<std::size_t>(config.steps), 0);
    if (role != Role::producer) r.c_mismatches[3] = 7;  // C went wrong once, on each consumer
    r.timed_wall_ms = 60.0 * (world_rank() + 1);        // the slowest rank's counts
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
    EXPECT_DOUBLE_EQ(p.time_per_step_ms, 60.0 * world_size() / 6);
    EXPECT_DOUBLE_EQ(p.cold_step_ms, 9.0);
    if (world_rank() != 0) return;  // the statistics are rank 0's
    const auto expect = [&](Phase phase, double median, double min, double max) {
        const PhaseStats& st = p.phase(phase);
        EXPECT_DOUBLE_EQ(st.median, median) << kPhases[index_of(phase)].name;
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
    // The transfer: the shorter of the producer's send and the consumer's receive.
    EXPECT_DOUBLE_EQ(p.transfer_ms, 6.5);
    ASSERT_EQ(p.pairs.size(), static_cast<std::size_t>(placement.pairs));
    EXPECT_DOUBLE_EQ(p.pairs[0].transfer_ms, 6.5);
    EXPECT_DOUBLE_EQ(p.pairs[0].step_ms, 14.5);
    EXPECT_DOUBLE_EQ(p.a_gbps, 4000.0 / (5.5 * 1e6));
    EXPECT_DOUBLE_EQ(p.b_gbps, 8000.0 / (8.5 * 1e6));
    // The step bound of the medians: overlap on, depth 2: max(A + transfer, C + B).
    EXPECT_DOUBLE_EQ(p.step_bound_ms, std::max(5.5 + 6.5, 14.0 + 8.5));
    EXPECT_DOUBLE_EQ(p.step_bound_ms, step_bound_ms(phase_medians(p), 2, true));
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
    const PhaseStats one = phase_stats({2.5});
    EXPECT_DOUBLE_EQ(one.p99, 2.5);
    EXPECT_DOUBLE_EQ(one.cv, 0.0);
    EXPECT_TRUE(std::isnan(phase_stats({kNaN, kNaN}).p90));
}

// A period over 3x the median on any rank makes its step slow, counted once.
TEST(ReportStatistics, SlowStepsAreCountedAndNamed) {
    const Config config = small_config();
    const PairPlacement placement = place_pairs(world_rank(), world_size(), false);
    PassResult result = pass_result(config, placement.role);
    result.steps[1].period = 1000.0;  // warm-up: not timed
    result.steps[5].period = 1000.0;
    if (world_rank() == 0) result.steps[6].period = 50.0;
    const PassSummary p = summarize_pass(MPI_COMM_WORLD, config, placement, result);
    const PassSummary plain =
        summarize_pass(MPI_COMM_WORLD, config, placement, pass_result(config, placement.role));
    if (world_rank() != 0) return;
    EXPECT_EQ(p.slow_steps, 2);
    EXPECT_EQ(p.slow_step_numbers, (std::vector<std::int64_t>{5, 6}));
    EXPECT_EQ(plain.slow_steps, 0);
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
    PassResult r = pass_result(config, placement.role);
    for (std::int64_t s = 0; s < config.steps; ++s) {
        StepTimes& t = r.steps[static_cast<std::size_t>(s)];
        if (placement.role != Role::producer) t.recv = 2.0 + static_cast<double>(s + world_rank());
        if (placement.role == Role::producer) t.send = 1.0 + static_cast<double>(s);
    }
    return summarize_pass(MPI_COMM_WORLD, config, placement, r);
}

TEST(ReportStatistics, ACollectiveTakesTheShortestRankOfItsGroup) {
    const PassSummary allreduce = collective_pass(Pattern::allreduce);
    const PassSummary broadcast = collective_pass(Pattern::broadcast);
    if (world_rank() != 0) return;
    // Timed steps 2..7: rank 0's receive, 4..9 ms, median 6.5.
    EXPECT_DOUBLE_EQ(allreduce.transfer_ms, 6.5);
    EXPECT_DOUBLE_EQ(allreduce.transfer_gbps, 4000.0 / (6.5 * 1e6));
    EXPECT_DOUBLE_EQ(allreduce.bus_gbps,
                     allreduce.transfer_gbps * bus_factor(Pattern::allreduce, world_size()));
    ASSERT_EQ(allreduce.pairs.size(), 1u) << "one group";
    EXPECT_DOUBLE_EQ(allreduce.pairs[0].transfer_ms, 6.5);
    // With two ranks the root only sends, 3..8 ms (median 5.5), shorter than rank 1's receive;
    // alone it receives its own broadcast.
    EXPECT_DOUBLE_EQ(broadcast.transfer_ms, world_size() == 1 ? 6.5 : 5.5);
    EXPECT_DOUBLE_EQ(broadcast.bus_gbps, broadcast.transfer_gbps);
}

// A summary made by hand, the way summarize_pass and summarize_run leave it on rank 0.
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
            const double base = (overlap ? 100.0 : 0.0) + static_cast<double>(i);
            p.phases[i] = {base + 0.5, base, base + 1.0};
        }
        p.time_per_step_ms = overlap ? 2.0 : 3.0;
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
              "a_cv,send_cv,recv_cv,c_cv,wait_cv,b_cv,step_cv,transfer_is_waiting,step_unstable,"
              "sm_clock_start_mhz,sm_clock_end_mhz,sm_clock_max_mhz,clock_slowdowns,repeat,relay_"
              "stages,relay_slowest_hop_ms,"
              "relay_period_over_slowest_hop,relay_fill_ms,launch");
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
        EXPECT_EQ(cell(std::string(kPhases[i].name) + "_ms"), std::to_string(100 + i) + ".5");
    }
    EXPECT_EQ(cell("step_ms_median"), "106.5");
    EXPECT_EQ(cell("step_ms_min"), "106");
    EXPECT_EQ(cell("step_ms_max"), "107");
    EXPECT_EQ(cell("time_per_step_ms"), "2");
    EXPECT_EQ(cell("time_per_step_no_overlap_ms"), "3");
    EXPECT_EQ(cell("overlap_speedup"), "1.5");
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
    for (std::size_t i = 0; i < kPhaseCount; ++i) {
        const nlohmann::json& st = on["phases_ms"][kPhases[i].name];
        EXPECT_DOUBLE_EQ(st["median"].get<double>(), 100.5 + static_cast<double>(i));
        EXPECT_DOUBLE_EQ(st["min"].get<double>(), 100.0 + static_cast<double>(i));
        for (const char* key : {"p50", "p90", "p99", "cv"}) EXPECT_TRUE(st.contains(key)) << key;
    }
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

TEST(ReportText, HeaderWrapsTheConfigAndGivesOneMemoryFigure) {
    if (world_rank() != 0) return;
    RunSummary s = hand_summary();
    s.device_bytes = 5u << 20;
    s.host_bytes = 3u << 20;
    s.total_bytes = 8u << 20;
    const std::string header = report_of(s, print_run_header);
    std::size_t config_lines = 0;
    for (std::size_t begin = 0; begin < header.size();) {
        const std::size_t end = header.find('\n', begin);
        const std::string line = header.substr(begin, end - begin);
        if (line.rfind("config:", 0) == 0 || line.rfind("  ", 0) == 0) {
            ++config_lines;
            EXPECT_LE(line.size(), 100u) << line;
        }
        begin = end == std::string::npos ? header.size() : end + 1;
    }
    EXPECT_GT(config_lines, 1u) << header;
    // Every key is still there, in the wrapped lines.
    for (const auto& key : config_keys()) {
        EXPECT_TRUE(has(header, std::string(key.name) + "=")) << key.name;
    }
    // The CPU path: one host figure, the whole of it, and no separate "host" part to disagree.
    EXPECT_TRUE(has(header, "memory per rank (largest): host 8.00 MiB (")) << header;
    EXPECT_FALSE(has(header, "device ")) << header;
    s.backend = "cuda";
    EXPECT_TRUE(
        has(report_of(s, print_run_header), "memory per rank (largest): device 5.00 MiB ("));
    EXPECT_TRUE(has(report_of(s, print_run_header), "; pinned host 3.00 MiB ("));
}

// Issue #32: a compare run on an oversubscribed CPU path whose phase medians cannot explain the
// step: made-up medians whose attribution terms cancel (C far slower than alone, the rest as far
// negative), a step model the step beats 2x, a transfer longer than its own step.
RunSummary contradicting_summary() {
    RunSummary s = hand_summary();
    s.ranks = {
        {"vm", "host CPU", "", "producer", "host memory (CPU path)", 0, "0-1", "0", "", 2, 5},
        {"vm", "host CPU", "", "consumer", "host memory (CPU path)", 0, "0-1", "0", "", 2, 5}};
    s.ceilings = {true, 0.09, 0.1, 0.1, 3.9, 80.0};
    for (PassSummary& p : s.passes) {
        p.phases[index_of(Phase::a)].median = 0.3;
        p.phases[index_of(Phase::b)].median = 0.5;
        p.phases[index_of(Phase::c)].median = p.overlap ? 13.1 : 4.0;
        p.phases[index_of(Phase::step)] = {8.0, 0.6, 27.0, 8.0, 20.0, 26.0, 0.43};
        p.transfer_ms = 9.0;  // longer than the step's median period: waiting, not moving
        p.time_per_step_ms = 8.0;
        p.step_bound_ms = 17.5;
    }
    s.overlap_speedup = 1.0;
    s.overlap_ideal_ms = 9.3;
    return s;
}

TEST(ReportTrust, ACancellingAttributionIsNotPrintedAsOne) {
    if (world_rank() != 0) return;
    const RunSummary s = contradicting_summary();
    const OverlapAttribution a = attribute_overlap(s);
    ASSERT_TRUE(a.measured);
    EXPECT_FALSE(a.explains);
    EXPECT_GT(std::fabs(a.rest_ms), kAttributionRestShare * a.step_ms) << "the made-up case";
    const std::string report = report_of(s, print_report);
    EXPECT_FALSE(has(report, "overlap, attributed:")) << report;
    EXPECT_TRUE(has(report, "overlap, not attributed: ")) << report;
    EXPECT_TRUE(has(report, "over a quarter of the step")) << report;
    // Why: the CPU path's 10 threads on 2 cores.
    EXPECT_TRUE(has(report, "phases timed while waiting for a core")) << report;
    EXPECT_TRUE(has(report, "10 busy threads on 2 cores")) << report;
}

TEST(ReportTrust, AModelTheStepBeatsTwiceIsNoExplanation) {
    if (world_rank() != 0) return;
    const RunSummary s = contradicting_summary();
    EXPECT_FALSE(step_model_explains(s.passes.back()));
    const std::string report = report_of(s, print_report);
    EXPECT_FALSE(has(report, "an estimate: phases that run together")) << report;
    EXPECT_TRUE(has(report, "beats it 2.19x, so the phase medians cannot explain the step"))
        << report;
}

TEST(ReportTrust, OnePerfectOverlapFigureAndAWaitingTransferHasNoBandwidth) {
    if (world_rank() != 0) return;
    RunSummary s = contradicting_summary();
    std::string report = report_of(s, print_report);
    std::size_t figures = 0;
    for (std::size_t at = report.find("perfect overlap"); at != std::string::npos;
         at = report.find("perfect overlap", at + 1)) {
        ++figures;
    }
    EXPECT_EQ(figures, 1u) << "the attribution is not printed, and names no second figure";
    EXPECT_TRUE(transfer_is_waiting(s, s.passes.back()));
    EXPECT_TRUE(has(report, "transfer 9.0000 ms = waiting, not moving (no bandwidth)")) << report;
    EXPECT_TRUE(has(report, "transfer measured waiting, not moving")) << report;
    const nlohmann::json j = nlohmann::json::parse(summary_json(s));
    EXPECT_EQ(j["passes"][1]["transfer_is_waiting"], true);
    EXPECT_EQ(j["overlap_attribution_explains"], false);

    // A healthy run: the attribution adds up, with "the rest" under a quarter, and says the
    // same perfect overlap figure as the line above it.
    s.ranks[0].host_threads = s.ranks[1].host_threads = 1;
    for (PassSummary& p : s.passes) {
        p.transfer_ms = 0.1;
        p.step_bound_ms = 4.6;
        p.phases[index_of(Phase::step)].cv = 0.02;
    }
    s.passes.back().time_per_step_ms = 13.5;
    s.passes.back().phases[index_of(Phase::c)].median = 12.0;
    const OverlapAttribution a = attribute_overlap(s);
    EXPECT_TRUE(a.explains) << a.why_not;
    report = report_of(s, print_report);
    EXPECT_TRUE(has(
        report, "overlap, attributed: step 13.5000 ms = perfect overlap " + fmt_ms(a.perfect_ms)))
        << report;
    EXPECT_TRUE(has(report, "perfect overlap: " + fmt_ms(a.perfect_ms) + " ms per step")) << report;
    EXPECT_FALSE(has(report, "waiting, not moving")) << report;
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
    EXPECT_TRUE(
        has(report, "  stability: step period p90 2.50x the median, cv 0.430, max 3.38x: UNSTABLE"))
        << report;
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
