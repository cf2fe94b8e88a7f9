// The results CSV: one {column, cell} table makes both the header and the row; beside it the side
// tables, a row per rank and per link, so that every rank and link is there at any rank count.
#include <string>
#include <utility>
#include <vector>

#include "report/render.hpp"
#include "report/write.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

using R = const CsvRow&;

std::string csv_bool(bool value) { return value ? "true" : "false"; }
const PassSummary& main_pass(R r) { return r.run.main_pass(); }
const PassJudgement& main_judged(R r) { return r.judged.passes.back(); }
std::string shown_cell(R r, PassFig f) { return csv_number(main_judged(r)[f].rendered()); }
std::string run_cell(R r, RunFig figure) { return csv_number(r.judged[figure].rendered()); }
std::string phase_cell(R r, Phase phase, double value) {
    return phase == Phase::step || r.judged.readable() ? csv_number(value) : "";
}

// The figures a rule of their own withholds (not the reading's): "transfer_gbps:no_transfer;...".
std::string withheld_cell(R r) {
    std::string cell;
    auto add = [&](const Figure& f, const char* name) {
        if (f.measured() && f.withheld_by != nullptr && f.withheld_by->finding == nullptr) {
            // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on ";" + name.
            if (!cell.empty()) cell += ';';
            cell.append(name).append(":").append(f.reason());
        }
    };
    for (std::size_t i = 0; i < kPassFigCount; ++i)
        add(main_judged(r).figures[i], figure_name(static_cast<PassFig>(i)).name);
    for (std::size_t i = 0; i < kRunFigCount; ++i)
        add(r.judged.run[i], figure_name(static_cast<RunFig>(i)).name);
    return cell;
}

constexpr std::pair<const char*, double PhaseStats::*> kDistributionColumns[] = {
    {"_ms_p50", &PhaseStats::p50},
    {"_ms_p90", &PhaseStats::p90},
    {"_ms_p99", &PhaseStats::p99},
    {"_cv", &PhaseStats::cv}};

template <typename Row>
struct Column {
    const char* name;
    std::string (*cell)(const Row&);
};
// A column whose `cell` is kDeckKey holds the deck key of its name, as the key table writes it.
using ColumnSpec = Column<CsvRow>;
constexpr std::string (*kDeckKey)(R) = nullptr;

const RelayFigures* relay(R r) { return main_pass(r).relay ? &*main_pass(r).relay : nullptr; }

const ColumnSpec kRunColumns[] = {
    {"tag", kDeckKey},
    {"timestamp", [](R r) { return r.run.timestamp; }},
    {"git_hash", [](R r) { return r.run.git_hash; }},
    {"world_size", [](R r) { return std::to_string(r.run.world_size); }},
    {"pairs", [](R r) { return std::to_string(r.run.pairs); }},
    {"backend", [](R r) { return r.run.backend; }},
    {"transport", [](R r) { return r.run.transport.substr(0, r.run.transport.find(' ')); }},
    {"gpu_name",
     [](R r) { return csv_text(r.run.ranks.empty() ? "" : r.run.ranks.front().device); }},
    {"dtype", kDeckKey},
    {"elements", kDeckKey},
    {"tensor_bytes", [](R r) { return std::to_string(r.run.config.tensor_bytes()); }},
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
    {"time_per_step_ms", [](R r) { return shown_cell(r, PassFig::time_per_step); }},
    {"step_ms_median", [](R r) { return csv_number(main_pass(r).phase(Phase::step).median); }},
    {"step_ms_min", [](R r) { return csv_number(main_pass(r).phase(Phase::step).min); }},
    {"step_ms_max", [](R r) { return csv_number(main_pass(r).phase(Phase::step).max); }},
    {"steps_per_s", [](R r) { return shown_cell(r, PassFig::steps_per_s); }},
};

const ColumnSpec kPassColumns[] = {
    {"transfer_gbps", [](R r) { return shown_cell(r, PassFig::transfer_rate); }},
    {"aggregate_gbps", [](R r) { return shown_cell(r, PassFig::aggregate_rate); }},
    {"a_gbps", [](R r) { return shown_cell(r, PassFig::a_rate); }},
    {"b_gbps", [](R r) { return shown_cell(r, PassFig::b_rate); }},
    {"cold_step_ms", [](R r) { return csv_number(r.run.passes.front().cold_step_ms); }},
    {"time_per_step_no_overlap_ms",
     [](R r) {
         return r.run.overlap_speedup > 0
                    ? csv_number(r.judged.passes.front()[PassFig::time_per_step].rendered())
                    : "";
     }},
    {"overlap_speedup", [](R r) { return run_cell(r, RunFig::speedup); }},
    {"x_checked", [](R r) { return std::to_string(r.run.verification_totals().x_checked); }},
    {"x_mismatches", [](R r) { return std::to_string(r.run.verification_totals().x_mismatches); }},
    {"c_mismatches", [](R r) { return std::to_string(r.run.verification_totals().c_mismatches); }},
    {"verified", [](R r) { return std::string(r.run.verified() ? "ok" : "failed"); }},
    {"step_bound_ms", [](R r) { return shown_cell(r, PassFig::step_model); }},
    {"overlap_ideal_ms", [](R r) { return run_cell(r, RunFig::perfect_overlap); }},
    {"pattern", kDeckKey},
    {"group_size", [](R r) { return std::to_string(r.run.group_size); }},
    {"algbw_gbps", [](R r) { return shown_cell(r, PassFig::transfer_rate); }},
    {"busbw_gbps", [](R r) { return shown_cell(r, PassFig::bus_rate); }},
    {"timing", [](R r) { return main_pass(r).timing; }},
    {"phase_timed_steps", [](R r) { return std::to_string(main_pass(r).phase_timed_steps); }},
    {"ceiling_transfer_ms",
     [](R r) { return r.run.ceilings.measured ? csv_number(r.run.ceilings.transfer_ms) : ""; }},
    {"transfer_vs_ceiling", [](R r) { return shown_cell(r, PassFig::transfer_vs_ceiling); }},
    {"a_vs_copy", [](R r) { return shown_cell(r, PassFig::a_vs_copy); }},
    {"b_vs_copy", [](R r) { return shown_cell(r, PassFig::b_vs_copy); }},
    {"c_vs_alone", [](R r) { return shown_cell(r, PassFig::c_vs_alone); }},
    {"output", kDeckKey},
    {"slow_steps", [](R r) { return std::to_string(main_pass(r).slow_steps); }},
    {"slow_pairs", [](R r) { return std::to_string(link_spread(main_pass(r).pairs).flagged); }},
};

const ColumnSpec kJudgedColumns[] = {
    {"step_unstable", [](R r) { return csv_bool(step_stability(main_pass(r)).unstable); }},
    {"sm_clock_start_mhz", [](R r) { return csv_number(main_pass(r).sm_clock_start_mhz); }},
    {"sm_clock_end_mhz", [](R r) { return csv_number(main_pass(r).sm_clock_end_mhz); }},
    {"sm_clock_max_mhz", [](R r) { return csv_number(main_pass(r).sm_clock_max_mhz); }},
    {"clock_slowdowns",
     [](R r) { return csv_text(clock_slowdown_names(main_pass(r).clock_reasons)); }},
    {"repeat", kDeckKey},
    {"relay_stages", [](R r) { return relay(r) ? std::to_string(relay(r)->stages) : ""; }},
    {"relay_slowest_hop_ms",
     [](R r) { return relay(r) ? phase_cell(r, Phase::recv, slowest_hop_ms(main_pass(r))) : ""; }},
    {"relay_period_over_slowest_hop",
     [](R r) { return shown_cell(r, PassFig::relay_period_over_hop); }},
    {"relay_fill_ms", [](R r) { return relay(r) ? csv_number(relay(r)->fill_ms) : ""; }},
    {"launch", kDeckKey},
    {"phase_times_readable", [](R r) { return csv_bool(r.judged.readable()); }},
    {"phase_times_unreadable_because", [](R r) { return csv_text(r.judged.codes()); }},
    {"mean_step_ms", [](R r) { return shown_cell(r, PassFig::mean_step); }},
    {"withheld", [](R r) { return csv_text(withheld_cell(r)); }},
};

// The 95% intervals of the figures scripts/plot draws, NAME_lo and NAME_hi, where shown.
std::string interval_cell(const Figure& f, bool high) {
    return f.shown() ? csv_number(high ? f.hi : f.lo) : "";
}
constexpr PassFig kIntervalColumns[] = {PassFig::time_per_step, PassFig::transfer_rate,
                                        PassFig::bus_rate, PassFig::aggregate_rate};

template <std::size_t N>
void append_columns(std::vector<CsvColumn>& columns, const ColumnSpec (&specs)[N]) {
    for (const ColumnSpec& spec : specs) {
        if (spec.cell != kDeckKey) {
            columns.push_back({spec.name, spec.cell});
        } else {
            columns.push_back({spec.name, [key = spec.name](R r) {
                                   return csv_text(config_value_text(r.run.config, key));
                               }});
        }
    }
}

// The columns in file order (docs/OUTPUT.md), older columns keeping their places.
std::vector<CsvColumn> make_results_csv_columns() {
    std::vector<CsvColumn> columns;
    append_columns(columns, kRunColumns);
    for (const PhaseInfo& phase : kPhases) {
        if (phase.phase == Phase::step) continue;
        columns.push_back({std::string(phase.name) + "_ms", [p = phase.phase](R r) {
                               return phase_cell(r, p, main_pass(r).phase(p).median);
                           }});
    }
    append_columns(columns, kPassColumns);
    for (const auto& [suffix, field] : kDistributionColumns) {
        for (const PhaseInfo& phase : kPhases) {
            columns.push_back({std::string(phase.name) + suffix, [p = phase.phase, field](R r) {
                                   return phase_cell(r, p, main_pass(r).phase(p).*field);
                               }});
        }
    }
    append_columns(columns, kJudgedColumns);
    for (const bool high : {false, true}) {
        for (const PassFig f : kIntervalColumns) {
            columns.push_back({std::string(figure_name(f).name) + (high ? "_hi" : "_lo"),
                               [f, high](R r) { return interval_cell(main_judged(r)[f], high); }});
        }
        columns.push_back({high ? "overlap_speedup_hi" : "overlap_speedup_lo",
                           [high](R r) { return interval_cell(r.judged[RunFig::speedup], high); }});
    }
    return columns;
}

// --- The side tables ----------------------------------------------------------------------------
// The results CSV's columns a side table's row repeats, to join the two.
constexpr const char* kJoinColumns[] = {"tag", "timestamp", "git_hash", "elements", "repeat"};

struct LinkRow {
    const RunSummary& run;
    const PassSummary& pass;
    const PairFigures& link;
    const Figure& rate;  // its judged transfer rate
};
std::string rank_cell(const RunSummary& run, int rank, std::string RankInfo::*field) {
    return rank >= 0 && static_cast<std::size_t>(rank) < run.ranks.size()
               ? csv_text(run.ranks[static_cast<std::size_t>(rank)].*field)
               : "";
}
using L = const LinkRow&;
const Column<LinkRow> kLinkColumns[] = {
    {"pass", [](L l) { return std::string(l.pass.overlap ? "on" : "off"); }},
    {"link", [](L l) { return std::to_string(l.link.pair); }},
    {"producer", [](L l) { return std::to_string(l.link.producer); }},
    {"consumer", [](L l) { return std::to_string(l.link.consumer); }},
    {"producer_host", [](L l) { return rank_cell(l.run, l.link.producer, &RankInfo::host); }},
    {"consumer_host", [](L l) { return rank_cell(l.run, l.link.consumer, &RankInfo::host); }},
    {"peer_link", [](L l) { return rank_cell(l.run, l.link.producer, &RankInfo::peer_link); }},
    {"step_ms", [](L l) { return csv_number(l.link.step_ms); }},
    {"transfer_ms", [](L l) { return csv_number(l.link.transfer_ms); }},
    {"transfer_gbps", [](L l) { return csv_number(l.rate.rendered()); }},
    {"slow", [](L l) { return csv_bool(l.link.slow); }},
    {"withheld", [](L l) { return std::string(l.rate.reason()); }},
};

template <typename Columns>
std::string side_header(std::string lead, const Columns& columns) {
    std::string header;
    for (const char* name : kJoinColumns) header += std::string(name) + ',';
    for (const auto& column : columns) lead += std::string(column.name) + ',';
    header += lead;
    header.pop_back();
    return header;
}
std::string rank_header() { return side_header("rank,", kRankFields); }
std::string link_header() { return side_header("", kLinkColumns); }

// A side table's line: the run's join cells, then `cells` (each followed by a comma).
std::string row_of(const CsvRow& run, const std::string& cells) {
    std::string line;
    for (const char* name : kJoinColumns)
        for (const CsvColumn& column : results_csv_columns())
            if (column.name == name) line += column.cell(run) + ',';
    line += cells;
    line.back() = '\n';
    return line;
}

void append_side_tables(const std::string& results_csv, const std::vector<RunSummary>& runs) {
    std::string ranks, links;
    for (const RunSummary& run : runs) {
        const Judgement judged = judge(run);
        const CsvRow joined{run, judged};
        for (std::size_t r = 0; r < run.ranks.size(); ++r) {
            std::string cells = std::to_string(r) + ',';
            for (const auto& [name, text, count] : kRankFields)
                cells +=
                    (text ? csv_text(run.ranks[r].*text) : std::to_string(run.ranks[r].*count)) +
                    ',';
            ranks += row_of(joined, cells);
        }
        for (std::size_t p = 0; p < run.passes.size(); ++p) {
            const PassSummary& pass = run.passes[p];
            for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
                const LinkRow row{run, pass, pass.pairs[i], judged.passes[p].links[i]};
                std::string cells;
                for (const auto& column : kLinkColumns) cells += column.cell(row) + ',';
                links += row_of(joined, cells);
            }
        }
    }
    append_csv_rows(side_table_path(results_csv, false), rank_header(), ranks);
    append_csv_rows(side_table_path(results_csv, true), link_header(), links);
}

}  // namespace

const std::vector<CsvColumn>& results_csv_columns() {
    static const std::vector<CsvColumn> columns = make_results_csv_columns();
    return columns;
}

std::string results_csv_header() {
    std::string header;
    for (const CsvColumn& column : results_csv_columns()) header += column.name + ',';
    header.pop_back();
    return header;
}

std::string results_csv_row(const RunSummary& run) {
    const Judgement judged = judge(run);
    const CsvRow row{run, judged};
    std::string line;
    for (const CsvColumn& column : results_csv_columns()) line += column.cell(row) + ',';
    line.pop_back();
    return line;
}

// "study.csv" -> "study.ranks.csv"; a name without ".csv" gets ".ranks.csv" after it.
std::string side_table_path(const std::string& results_csv, bool links) {
    const bool csv = results_csv.size() > 4 && results_csv.substr(results_csv.size() - 4) == ".csv";
    return (csv ? results_csv.substr(0, results_csv.size() - 4) : results_csv) +
           (links ? ".links.csv" : ".ranks.csv");
}

void check_results_csv_header(const std::string& path) {
    check_csv_header(path, results_csv_header());
    check_csv_header(side_table_path(path, false), rank_header());
    check_csv_header(side_table_path(path, true), link_header());
}

void append_results_csv(const std::string& path, const std::vector<RunSummary>& runs) {
    std::string rows;
    for (const RunSummary& run : runs) rows += results_csv_row(run) + "\n";
    append_csv_rows(path, results_csv_header(), rows);
    append_side_tables(path, runs);
}

}  // namespace gpurelay
