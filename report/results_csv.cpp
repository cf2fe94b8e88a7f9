// The results CSV: one {column, cell} table makes both the header and the row; rows are
// appended under a lock, whole or not at all (report/file_write.cpp), and beside them the side
// tables' rows (report/side_tables.cpp).
#include <string>
#include <vector>

#include "report/file_write.hpp"
#include "report/report.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

std::string csv_bool(bool value) { return value ? "true" : "false"; }
bool compared(const RunSummary& r) { return r.overlap_speedup > 0; }
std::string ceiling_cell(const RunSummary& r, double CeilingRatios::*figure) {
    if (!r.ceilings.measured) return "";
    return csv_number(against_ceilings(r.main_pass(), r.ceilings).*figure);
}

int slow_pairs(const PassSummary& p) {
    int slow = 0;
    for (const PairFigures& f : p.pairs) slow += f.slow ? 1 : 0;
    return slow;
}

struct DistributionColumn {
    const char* suffix;
    double PhaseStats::*field;
};
// Named PHASE + suffix: step_ms_p99, b_cv (a ratio, without unit).
constexpr DistributionColumn kDistributionColumns[] = {{"_ms_p50", &PhaseStats::p50},
                                                       {"_ms_p90", &PhaseStats::p90},
                                                       {"_ms_p99", &PhaseStats::p99},
                                                       {"_cv", &PhaseStats::cv}};

using R = const RunSummary&;
// A column of its own cell; or, where `cell` is kDeckKey, the deck key of the column's name, as
// the key table writes it.
struct ColumnSpec {
    const char* name;
    std::string (*cell)(R);
};
constexpr std::string (*kDeckKey)(R) = nullptr;

// A relay's cell from its main pass's figures; empty for other patterns.
std::string relay_cell(R r, std::string (*cell)(R, const RelayFigures&)) {
    const auto& relay = r.main_pass().relay;
    return relay ? cell(r, *relay) : std::string();
}

// The columns before the phase medians.
const ColumnSpec kRunColumns[] = {
    {"tag", kDeckKey},
    {"timestamp", [](R r) { return r.timestamp; }},
    {"git_hash", [](R r) { return r.git_hash; }},
    {"world_size", [](R r) { return std::to_string(r.world_size); }},
    {"pairs", [](R r) { return std::to_string(r.pairs); }},
    {"backend", [](R r) { return r.backend; }},
    {"transport", [](R r) { return r.transport.substr(0, r.transport.find(' ')); }},
    {"gpu_name", [](R r) { return csv_text(r.ranks.empty() ? "" : r.ranks.front().device); }},
    {"dtype", kDeckKey},
    {"elements", kDeckKey},
    {"tensor_bytes", [](R r) { return std::to_string(r.config.tensor_bytes()); }},
    {"steps", kDeckKey},
    {"warmup", kDeckKey},
    {"depth", kDeckKey},
    {"overlap", kDeckKey},
    {"blocking", kDeckKey},
    {"graphs", kDeckKey},
    {"c_elements", kDeckKey},
    {"c_iterations", kDeckKey},
    {"pairing", kDeckKey},
    {"chunk", kDeckKey},
    {"time_per_step_ms", [](R r) { return csv_number(r.main_pass().time_per_step_ms); }},
    {"step_ms_median", [](R r) { return csv_number(r.main_pass().phase(Phase::step).median); }},
    {"step_ms_min", [](R r) { return csv_number(r.main_pass().phase(Phase::step).min); }},
    {"step_ms_max", [](R r) { return csv_number(r.main_pass().phase(Phase::step).max); }},
    {"steps_per_s", [](R r) { return csv_number(r.main_pass().steps_per_s); }},
};

// The columns after the phase medians.
const ColumnSpec kPassColumns[] = {
    {"transfer_gbps", [](R r) { return csv_number(r.main_pass().transfer_gbps); }},
    {"aggregate_gbps", [](R r) { return csv_number(r.main_pass().aggregate_gbps); }},
    {"a_gbps", [](R r) { return csv_number(r.main_pass().a_gbps); }},
    {"b_gbps", [](R r) { return csv_number(r.main_pass().b_gbps); }},
    {"cold_step_ms", [](R r) { return csv_number(r.passes.front().cold_step_ms); }},
    {"time_per_step_no_overlap_ms",
     [](R r) { return compared(r) ? csv_number(r.passes.front().time_per_step_ms) : ""; }},
    {"overlap_speedup", [](R r) { return compared(r) ? csv_number(r.overlap_speedup) : ""; }},
    {"x_checked", [](R r) { return std::to_string(r.verification_totals().x_checked); }},
    {"x_mismatches", [](R r) { return std::to_string(r.verification_totals().x_mismatches); }},
    {"c_mismatches", [](R r) { return std::to_string(r.verification_totals().c_mismatches); }},
    {"verified", [](R r) { return std::string(r.verified() ? "ok" : "failed"); }},
    {"step_bound_ms", [](R r) { return csv_number(r.main_pass().step_bound_ms); }},
    {"overlap_ideal_ms", [](R r) { return compared(r) ? csv_number(r.overlap_ideal_ms) : ""; }},
    {"pattern", kDeckKey},
    {"group_size", [](R r) { return std::to_string(r.group_size); }},
    {"algbw_gbps", [](R r) { return csv_number(r.main_pass().transfer_gbps); }},
    {"busbw_gbps", [](R r) { return csv_number(r.main_pass().bus_gbps); }},
    // How the main pass was timed ("sampled:16"), and how many of its timed steps carry phase
    // times (the phase columns are medians over those).
    {"timing", [](R r) { return r.main_pass().timing; }},
    {"phase_timed_steps", [](R r) { return std::to_string(r.main_pass().phase_timed_steps); }},
    // The main pass against this launch's ceilings (calibrate = true; empty otherwise).
    {"ceiling_transfer_ms",
     [](R r) { return r.ceilings.measured ? csv_number(r.ceilings.transfer_ms) : ""; }},
    {"transfer_vs_ceiling", [](R r) { return ceiling_cell(r, &CeilingRatios::transfer); }},
    {"a_vs_copy", [](R r) { return ceiling_cell(r, &CeilingRatios::a); }},
    {"b_vs_copy", [](R r) { return ceiling_cell(r, &CeilingRatios::b); }},
    {"c_vs_alone", [](R r) { return ceiling_cell(r, &CeilingRatios::c); }},
    // The HDF5 file the row's measurements and /y are in, as the run resolved it.
    {"output", kDeckKey},
    {"slow_steps", [](R r) { return std::to_string(r.main_pass().slow_steps); }},
    {"slow_pairs", [](R r) { return std::to_string(slow_pairs(r.main_pass())); }},
};

// Whether the figures measure the work (after the distributions: older columns keep their
// places). scripts/plot leaves rows whose transfer measured waiting out of bandwidth plots.
const ColumnSpec kJudgedColumns[] = {
    {"transfer_is_waiting", [](R r) { return csv_bool(transfer_is_waiting(r, r.main_pass())); }},
    {"step_unstable", [](R r) { return csv_bool(step_stability(r.main_pass()).unstable); }},
    {"sm_clock_start_mhz", [](R r) { return csv_number(r.main_pass().sm_clock_start_mhz); }},
    {"sm_clock_end_mhz", [](R r) { return csv_number(r.main_pass().sm_clock_end_mhz); }},
    {"sm_clock_max_mhz", [](R r) { return csv_number(r.main_pass().sm_clock_max_mhz); }},
    {"clock_slowdowns",
     [](R r) { return csv_text(clock_slowdown_names(r.main_pass().clock_reasons)); }},
    // Which launch of a repeated configuration the row is (scripts/sweep --repeat).
    {"repeat", kDeckKey},
    // A relay's (empty for other patterns): its stages, its slowest hop's median transfer, the
    // period over that, and the fill latency (the JSON's passes[].relay).
    {"relay_stages",
     [](R r) {
         return relay_cell(r, [](R, const RelayFigures& f) { return std::to_string(f.stages); });
     }},
    {"relay_slowest_hop_ms",
     [](R r) {
         return relay_cell(r, [](R run, const RelayFigures&) {
             return csv_number(slowest_hop_ms(run.main_pass()));
         });
     }},
    {"relay_period_over_slowest_hop",
     [](R r) {
         return relay_cell(r, [](R run, const RelayFigures&) {
             return csv_number(period_over_slowest_hop(run.main_pass()));
         });
     }},
    {"relay_fill_ms",
     [](R r) {
         return relay_cell(r, [](R, const RelayFigures& f) { return csv_number(f.fill_ms); });
     }},
    // Who queued the steps: the host, or the device's persistent roles.
    {"launch", kDeckKey},
    // Whether the run's phase times can be read (read_phase_times), and where not, the reasons'
    // codes joined by ';': the report leaves out the figures built on them, this row keeps them.
    {"phase_times_readable", [](R r) { return csv_bool(read_phase_times(r).readable()); }},
    {"phase_times_unreadable_because", [](R r) { return csv_text(read_phase_times(r).codes()); }},
};

template <std::size_t N>
void append_columns(std::vector<CsvColumn>& columns, const ColumnSpec (&specs)[N]) {
    for (const ColumnSpec& spec : specs) {
        if (spec.cell != kDeckKey) {
            columns.push_back({spec.name, spec.cell});
        } else {
            columns.push_back({spec.name, [key = spec.name](R r) {
                                   return csv_text(config_value_text(r.config, key));
                               }});
        }
    }
}

// The columns in file order: the run's, each timed phase's median (the step's period has its
// median, min and max among the run's, as step_ms_*), the pass's, then the distributions (last
// but the judgements, so the columns before them keep their places: every timed phase by
// percentile, then the coefficients of variation).
std::vector<CsvColumn> make_results_csv_columns() {
    std::vector<CsvColumn> columns;
    append_columns(columns, kRunColumns);
    for (const PhaseInfo& phase : kPhases) {
        if (phase.phase == Phase::step) continue;
        columns.push_back({std::string(phase.name) + "_ms", [p = phase.phase](R r) {
                               return csv_number(r.main_pass().phase(p).median);
                           }});
    }
    append_columns(columns, kPassColumns);
    for (const auto& [suffix, field] : kDistributionColumns) {
        for (const PhaseInfo& phase : kPhases) {
            columns.push_back({std::string(phase.name) + suffix, [p = phase.phase, field](R r) {
                                   return csv_number(r.main_pass().phase(p).*field);
                               }});
        }
    }
    append_columns(columns, kJudgedColumns);
    return columns;
}

}  // namespace

const std::vector<CsvColumn>& results_csv_columns() {
    static const std::vector<CsvColumn> columns = make_results_csv_columns();
    return columns;
}

std::string results_csv_header() {
    std::string header;
    for (const CsvColumn& column : results_csv_columns()) {
        if (!header.empty()) header += ',';
        header += column.name;
    }
    return header;
}

std::string results_csv_row(const RunSummary& run) {
    std::string line;
    // Joined by position, not by whether the line is still empty: the tag (first) may be empty.
    for (const CsvColumn& column : results_csv_columns()) {
        if (&column != &results_csv_columns().front()) line += ',';
        line += column.cell(run);
    }
    return line;
}

void check_results_csv_header(const std::string& path) {
    check_csv_header(path, results_csv_header());
    check_side_table_headers(path);
}

void append_results_csv(const std::string& path, const RunSummary& s) {
    append_results_csv(path, std::vector<RunSummary>{s});
}

void append_results_csv(const std::string& path, const std::vector<RunSummary>& runs) {
    std::string rows;
    for (const RunSummary& run : runs) rows += results_csv_row(run) + "\n";
    append_csv_rows(path, results_csv_header(), rows);
    append_side_tables(path, runs);
}

}  // namespace gpurelay
