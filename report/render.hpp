// The summary and its judgement rendered (never judged again): the report, the JSON, the CSV
// row; and the progress line while the steps run.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "report/judge.hpp"

namespace gpurelay {

// Before the steps (needs no passes), and after the run.
void print_run_header(std::FILE* out, const RunSummary& summary);
void print_report(std::FILE* out, const RunSummary& summary);
// A run of several sizes: a row per size as nccl-tests prints one, then the verdict. `first`
// numbers the first row (the sizes before it ran in a launch that stopped).
void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first);

// The JSON's "schema_version": 2 since config values are typed; 3 since every figure is judged.
inline constexpr int kSummarySchemaVersion = 3;
// The JSON summary; its "ranks" (the file's root attribute of that name).
std::string summary_json(const RunSummary& summary);
std::string ranks_json(const RunSummary& summary);
// A run of several sizes: each size's summary_json under "cases"; `verified` covers every size
// of the run, those of an earlier launch too.
std::string sizes_json(const std::vector<RunSummary>& sizes, bool verified);
// A pass's relay figures as JSON text (the file's pass attributes too); "null" for other patterns.
std::string relay_json(const PassSummary& pass);

// One column of the results CSV, which the header and the row both walk.
struct CsvRow {
    const RunSummary& run;
    const Judgement& judged;
};
struct CsvColumn {
    std::string name;
    std::function<std::string(const CsvRow& row)> cell;
};
const std::vector<CsvColumn>& results_csv_columns();
std::string results_csv_header();                    // one line, without newline
std::string results_csv_row(const RunSummary& run);  // one line, without newline

// --- What the renderers share -------------------------------------------------------------------
// The report lists the ranks one a line up to kRanksListed, a pass's links (and a relay's stages)
// up to kLinksListed, else their summary and the kSlowestNamed slowest, so its length holds at
// any rank count; the JSON, CSV and file keep all.
inline constexpr std::size_t kSlowestNamed = 5;
inline constexpr std::size_t kRanksListed = 4;
inline constexpr std::size_t kLinksListed = 2 + kSlowestNamed;
// A pass's links summarised; `slowest`: the indices of the kSlowestNamed slowest.
struct LinkSpread {
    std::size_t count = 0, flagged = 0;
    PhaseStats transfer{}, step{};
    std::vector<std::size_t> slowest;
};
LinkSpread link_spread(const std::vector<PairFigures>& links);
// A pass's stability line; when unstable the likely causes and what to do, once (`causes_said`).
void print_stability(std::FILE* out, const RunSummary& summary, const PassSummary& pass,
                     bool& causes_said);
// The header's notes on placement; a rank's cores and NUMA nodes ("cores 0-7,16 (NUMA node 0)").
void print_placement_notes(std::FILE* out, const RunSummary& summary);
std::string placement_text(const RankInfo& rank);
// The ranks bound to fewer cores than their working threads, on hosts oversubscribed_hosts does
// not name.
struct CrowdedRanks {
    std::vector<int> ranks;
    int most_threads = 0, fewest_cores = 0;
};
CrowdedRanks crowded_ranks(const RunSummary& summary);
// How to bind the ranks near their GPU, a core for each thread of the busiest rank.
std::string binding_command(const RunSummary& summary);
// Why the phase times may measure waiting rather than work ("" when nothing is known to).
std::string waiting_cause(const RunSummary& summary);

// --- Progress on rank 0 -------------------------------------------------------------------------
// A line redrawn in place when the process is alone on a terminal, else whole lines every 10 s.
// Under a launcher (Open MPI, PMIx, Slurm) stdout may be a pseudo-terminal forwarded into a batch
// log, where redraws pile onto one line.
bool progress_in_place(bool stdout_is_terminal);

// Where a run is: "size 2 of 3, pass 2 of 2 (overlap=on), step 12 of 12"; `passes`: each pass's
// overlap, in run order.
std::string progress_place(std::int64_t done, std::int64_t steps, const std::vector<bool>& passes,
                           std::int64_t sizes);

class Progress {
  public:
    // `enabled`: print at all (rank 0, not quiet); `already_done`: the steps a resumed run did
    // before it stopped (counted as done, not timed).
    Progress(bool enabled, std::int64_t steps, std::vector<bool> passes, std::int64_t sizes,
             std::int64_t already_done = 0);
    void step_done();  // prints when the line is due
    // A run with a duration (seconds from the start; 0: none) has at most what remains of it left.
    void end_by(double duration_s);
    // The pass ended before its steps did (its share of the duration was up).
    void pass_ended();

  private:
    bool enabled_, in_place_;
    std::int64_t steps_;
    std::vector<bool> passes_;
    std::int64_t sizes_, total_, first_, done_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
    double duration_s_ = 0;
};

}  // namespace gpurelay
