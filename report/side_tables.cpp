// The results CSV's side tables (write.hpp), so that every rank and link the report summarises
// is there at any rank count: each one table that makes its header and its rows.
#include <string>
#include <vector>

#include "report/render.hpp"
#include "report/write.hpp"

namespace gpurelay {
namespace {

using R = const RunSummary&;

// The results CSV's columns a side table's row repeats, to join the two.
constexpr const char* kJoinColumns[] = {"tag", "timestamp", "git_hash", "elements", "repeat"};

std::string join_cells(const CsvRow& run) {
    std::string cells;
    for (const char* name : kJoinColumns) {
        for (const CsvColumn& column : results_csv_columns()) {
            if (column.name == name) cells += column.cell(run) + ',';
        }
    }
    return cells;
}

struct LinkRow {
    const RunSummary& run;
    const PassSummary& pass;
    const PairFigures& link;
    const Figure& rate;  // its judged transfer rate
};
// A field of rank `rank` as a cell ("" for a rank the run does not list).
std::string rank_cell(R run, int rank, std::string RankInfo::*field) {
    return rank >= 0 && static_cast<std::size_t>(rank) < run.ranks.size()
               ? csv_text(run.ranks[static_cast<std::size_t>(rank)].*field)
               : "";
}
struct LinkColumn {
    const char* name;
    std::string (*cell)(const LinkRow&);
};
const LinkColumn kLinkColumns[] = {
    {"pass", [](const LinkRow& l) { return std::string(l.pass.overlap ? "on" : "off"); }},
    // The pair, a relay's hop or a collective's group, numbered as the report and the JSON do.
    {"link", [](const LinkRow& l) { return std::to_string(l.link.pair); }},
    {"producer", [](const LinkRow& l) { return std::to_string(l.link.producer); }},
    {"consumer", [](const LinkRow& l) { return std::to_string(l.link.consumer); }},
    {"producer_host",
     [](const LinkRow& l) { return rank_cell(l.run, l.link.producer, &RankInfo::host); }},
    {"consumer_host",
     [](const LinkRow& l) { return rank_cell(l.run, l.link.consumer, &RankInfo::host); }},
    {"peer_link",
     [](const LinkRow& l) { return rank_cell(l.run, l.link.producer, &RankInfo::peer_link); }},
    {"step_ms", [](const LinkRow& l) { return csv_number(l.link.step_ms); }},
    {"transfer_ms", [](const LinkRow& l) { return csv_number(l.link.transfer_ms); }},
    {"transfer_gbps", [](const LinkRow& l) { return csv_number(l.rate.rendered()); }},
    {"slow", [](const LinkRow& l) { return std::string(l.link.slow ? "true" : "false"); }},
    // The rule that withholds the link's rate (empty where shown), as the JSON's pairs[].
    {"withheld", [](const LinkRow& l) { return std::string(l.rate.reason()); }},
};

// The join columns, then `columns` (each name followed by a comma).
std::string header_of(const std::string& columns) {
    std::string header;
    for (const char* name : kJoinColumns) header += std::string(name) + ',';
    header += columns;
    header.pop_back();
    return header;
}
std::string row_of(const CsvRow& run, const std::string& cells) {
    std::string line = join_cells(run) + cells;
    line.back() = '\n';
    return line;
}

// A rank's columns: its number, then RankInfo's fields.
std::string rank_header() {
    std::string names = "rank,";
    for (const RankField& f : kRankFields) names += std::string(f.name) + ',';
    return header_of(names);
}
std::string rank_cells(std::size_t rank, const RankInfo& info) {
    std::string cells = std::to_string(rank) + ',';
    for (const RankField& f : kRankFields) {
        cells += (f.text != nullptr ? csv_text(info.*f.text) : std::to_string(info.*f.count)) + ',';
    }
    return cells;
}

std::string link_header() {
    std::string names;
    for (const LinkColumn& column : kLinkColumns) names += std::string(column.name) + ',';
    return header_of(names);
}
std::string link_cells(const LinkRow& row) {
    std::string cells;
    for (const LinkColumn& column : kLinkColumns) cells += column.cell(row) + ',';
    return cells;
}

}  // namespace

// "study.csv" -> "study.ranks.csv"; a name without ".csv" gets ".ranks.csv" after it.
std::string side_table_path(const std::string& results_csv, bool links) {
    const bool csv = results_csv.size() > 4 && results_csv.substr(results_csv.size() - 4) == ".csv";
    return (csv ? results_csv.substr(0, results_csv.size() - 4) : results_csv) +
           (links ? ".links.csv" : ".ranks.csv");
}

void check_side_table_headers(const std::string& results_csv) {
    check_csv_header(side_table_path(results_csv, false), rank_header());
    check_csv_header(side_table_path(results_csv, true), link_header());
}

void append_side_tables(const std::string& results_csv, const std::vector<RunSummary>& runs) {
    std::string ranks, links;
    for (const RunSummary& run : runs) {
        const Judgement judged = judge(run);
        const CsvRow joined{run, judged};
        for (std::size_t r = 0; r < run.ranks.size(); ++r) {
            ranks += row_of(joined, rank_cells(r, run.ranks[r]));
        }
        for (std::size_t p = 0; p < run.passes.size(); ++p) {
            const PassSummary& pass = run.passes[p];
            for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
                links += row_of(joined,
                                link_cells({run, pass, pass.pairs[i], judged.passes[p].links[i]}));
            }
        }
    }
    append_csv_rows(side_table_path(results_csv, false), rank_header(), ranks);
    append_csv_rows(side_table_path(results_csv, true), link_header(), links);
}

}  // namespace gpurelay
