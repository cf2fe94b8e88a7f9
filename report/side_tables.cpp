// The results CSV's side tables, beside it: a row per rank (NAME.ranks.csv) and a row per link of
// each pass (NAME.links.csv), so that every rank and pair the report summarises is there at any
// rank count. Each is one {column, cell} table that makes its header and its rows; each row
// starts with the run's columns that join it to its row of the results CSV.
#include <string>
#include <vector>

#include "report/file_write.hpp"
#include "report/judge.hpp"

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

struct RankRow {
    std::size_t rank;
    const RankInfo& info;
};
struct RankColumn {
    const char* name;
    std::string (*cell)(const RankRow&);
};
const RankColumn kRankColumns[] = {
    {"rank", [](const RankRow& r) { return std::to_string(r.rank); }},
    {"host", [](const RankRow& r) { return csv_text(r.info.host); }},
    {"device", [](const RankRow& r) { return csv_text(r.info.device); }},
    {"bus_id", [](const RankRow& r) { return csv_text(r.info.bus_id); }},
    {"role", [](const RankRow& r) { return r.info.role; }},
    // Its pair, or in a relay or a collective its row of /y.
    {"pair", [](const RankRow& r) { return std::to_string(r.info.pair); }},
    {"peer_link", [](const RankRow& r) { return csv_text(r.info.peer_link); }},
    {"cores", [](const RankRow& r) { return csv_text(r.info.cores); }},
    {"core_numa", [](const RankRow& r) { return csv_text(r.info.core_numa); }},
    {"gpu_numa", [](const RankRow& r) { return csv_text(r.info.gpu_numa); }},
    {"core_count", [](const RankRow& r) { return std::to_string(r.info.core_count); }},
    {"host_threads", [](const RankRow& r) { return std::to_string(r.info.host_threads); }},
};

struct LinkRow {
    const RunSummary& run;
    const PassSummary& pass;
    const PairFigures& link;
    const Figure& rate;  // its judged transfer rate
};
std::string host_of(R run, int rank) {
    return rank >= 0 && static_cast<std::size_t>(rank) < run.ranks.size()
               ? csv_text(run.ranks[static_cast<std::size_t>(rank)].host)
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
    {"producer_host", [](const LinkRow& l) { return host_of(l.run, l.link.producer); }},
    {"consumer_host", [](const LinkRow& l) { return host_of(l.run, l.link.consumer); }},
    {"peer_link",
     [](const LinkRow& l) {
         const int p = l.link.producer;
         return p >= 0 && static_cast<std::size_t>(p) < l.run.ranks.size()
                    ? csv_text(l.run.ranks[static_cast<std::size_t>(p)].peer_link)
                    : std::string();
     }},
    {"step_ms", [](const LinkRow& l) { return csv_number(l.link.step_ms); }},
    {"transfer_ms", [](const LinkRow& l) { return csv_number(l.link.transfer_ms); }},
    {"transfer_gbps", [](const LinkRow& l) { return csv_number(l.rate.rendered()); }},
    {"slow", [](const LinkRow& l) { return std::string(l.link.slow ? "true" : "false"); }},
    // The rule that withholds the link's rate (empty where shown), as the JSON's pairs[].
    {"withheld", [](const LinkRow& l) { return std::string(l.rate.reason()); }},
};

template <typename Column, std::size_t N>
std::string header_of(const Column (&columns)[N]) {
    std::string header;
    for (const char* name : kJoinColumns) header += std::string(name) + ',';
    for (const Column& column : columns) header += std::string(column.name) + ',';
    header.pop_back();
    return header;
}

template <typename Column, std::size_t N, typename Row>
std::string row_of(const CsvRow& run, const Column (&columns)[N], const Row& row) {
    std::string line = join_cells(run);
    for (const Column& column : columns) line += column.cell(row) + ',';
    line.back() = '\n';
    return line;
}

// "study.csv" -> "study.ranks.csv"; a name without ".csv" gets ".ranks.csv" after it.
std::string side_path(const std::string& results_csv, const char* table) {
    const bool csv = results_csv.size() > 4 && results_csv.substr(results_csv.size() - 4) == ".csv";
    return (csv ? results_csv.substr(0, results_csv.size() - 4) : results_csv) + "." + table +
           ".csv";
}

}  // namespace

std::string side_table_path(const std::string& results_csv, bool links) {
    return side_path(results_csv, links ? "links" : "ranks");
}

void check_side_table_headers(const std::string& results_csv) {
    check_csv_header(side_table_path(results_csv, false), header_of(kRankColumns));
    check_csv_header(side_table_path(results_csv, true), header_of(kLinkColumns));
}

void append_side_tables(const std::string& results_csv, const std::vector<RunSummary>& runs) {
    std::string ranks, links;
    for (const RunSummary& run : runs) {
        const Judgement judged = judge(run);
        const CsvRow joined{run, judged};
        for (std::size_t r = 0; r < run.ranks.size(); ++r) {
            ranks += row_of(joined, kRankColumns, RankRow{r, run.ranks[r]});
        }
        for (std::size_t p = 0; p < run.passes.size(); ++p) {
            const PassSummary& pass = run.passes[p];
            for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
                links += row_of(joined, kLinkColumns,
                                LinkRow{run, pass, pass.pairs[i], judged.passes[p].links[i]});
            }
        }
    }
    append_csv_rows(side_table_path(results_csv, false), header_of(kRankColumns), ranks);
    append_csv_rows(side_table_path(results_csv, true), header_of(kLinkColumns), links);
}

}  // namespace gpurelay
