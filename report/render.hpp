// The summary and its judgement rendered (never judged again): the report's header and body on
// rank 0, the table of a run of several sizes, the JSON summary, the results CSV's row; and the
// progress line while the steps run.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "report/judge.hpp"

namespace gpurelay {

// Before the steps: the ranks, transport, changed keys, versions and memory (needs no passes).
void print_run_header(std::FILE* out, const RunSummary& summary);
// After the run: each pass's phases and rates, the overlap speedup, verification and the output.
void print_report(std::FILE* out, const RunSummary& summary);
// A run of several sizes: a row per size as nccl-tests prints one, then the verdict. `first`
// numbers the first row: the sizes before it ran in a launch that stopped, and are only in the
// file.
void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first);

// The JSON's "schema_version": 2 since config values are typed; 3 since every figure is judged.
inline constexpr int kSummarySchemaVersion = 3;
// The JSON summary: provenance, the resolved config (typed), the ranks, each pass.
std::string summary_json(const RunSummary& summary);
// The JSON summary's "ranks", for the file's root attribute of the same name.
std::string ranks_json(const RunSummary& summary);
// A run of several sizes: {"schema_version", "sizes", "verified", "cases": [each size's
// summary_json]}; `verified` covers every size of the run, those of an earlier launch too.
std::string sizes_json(const std::vector<RunSummary>& sizes, bool verified);
// A pass's relay figures as the JSON and the file's pass attributes carry them (JSON text: the
// library keeps nlohmann-json private); "null" for other patterns.
std::string relay_json(const PassSummary& pass);

// One column of the results CSV: its name and its cell from a run and its judgement. The header
// and the row both walk this one table.
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
// up to kLinksListed, else their summary (how many, the median, the extremes and the
// kSlowestNamed slowest), so its length holds at any rank count; the JSON, CSV and file keep all.
inline constexpr std::size_t kSlowestNamed = 5;
inline constexpr std::size_t kRanksListed = 4;
inline constexpr std::size_t kLinksListed = 2 + kSlowestNamed;
// The ranks in two lines: hosts x ranks x GPUs and the roles; how they reach their peers and
// where they may run, each distinct value with its count, the commonest first.
std::vector<std::string> rank_summary_lines(const RunSummary& summary);
// A pass's links summarised: the transfers' and steps' distributions, how many are flagged slow,
// and the kSlowestNamed slowest (indices, by the measure they are flagged by).
struct LinkSpread {
    std::size_t count = 0, flagged = 0;
    PhaseStats transfer{}, step{};
    std::vector<std::size_t> slowest;
};
LinkSpread link_spread(const std::vector<PairFigures>& links);
// A pass's links: one a line up to kLinksListed, else the summary and the slowest.
std::vector<std::string> link_lines(const RunSummary& summary, const PassSummary& pass,
                                    const PassJudgement& judged);
// A relay's headline: the period, the slowest hop by its stages, the fill latency.
void print_relay(std::FILE* out, const PassSummary& pass, const PassJudgement& judged);
// Each hop against its own ceiling, and each stage, one a line up to kLinksListed.
void print_relay_stages(std::FILE* out, const PassSummary& pass, const PassJudgement& judged);
// A pass's stability line; when unstable the likely causes and what to do, once (`causes_said`);
// on the CUDA path its clock line.
void print_stability(std::FILE* out, const RunSummary& summary, const PassSummary& pass,
                     bool& causes_said);
// The header's notes on placement: GPUs shared time-sliced, ranks away from their GPU's node,
// ranks with fewer cores than working threads.
void print_placement_notes(std::FILE* out, const RunSummary& summary);
// A rank's cores and NUMA nodes: "cores 0-7,16 (NUMA node 0)".
std::string placement_text(const RankInfo& rank);
// The ranks bound to fewer cores than their working threads, on hosts oversubscribed_hosts does
// not name: their threads take turns.
struct CrowdedRanks {
    std::vector<int> ranks;
    int most_threads = 0, fewest_cores = 0;
};
CrowdedRanks crowded_ranks(const RunSummary& summary);
// How to bind the ranks near their GPU, a core for each thread of the busiest rank:
// "mpirun --bind-to core --map-by numa", or with ":PE=N" where a rank has N > 1 threads.
std::string binding_command(const RunSummary& summary);
// Why the phase times may measure waiting rather than work ("" when nothing is known to).
std::string waiting_cause(const RunSummary& summary);

// --- Progress on rank 0 -------------------------------------------------------------------------
// A line redrawn in place when the process is alone on a terminal, else whole lines every 10 s.
// In place only where stdout is a terminal and no launcher stands between it and the user: under
// Open MPI (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK) or Slurm (SLURM_JOB_ID) it may be the
// launcher's pseudo-terminal, forwarded into a batch log, where redraws pile onto one line.
bool progress_in_place(bool stdout_is_terminal);

// Where a run is, as the progress line says it: its size (of several), its pass and the step in
// that pass, each counted from 1: "size 2 of 3, pass 2 of 2 (overlap=on), step 12 of 12".
// `passes`: each pass's overlap, in run order.
std::string progress_place(std::int64_t done, std::int64_t steps, const std::vector<bool>& passes,
                           std::int64_t sizes);

class Progress {
  public:
    // `enabled`: print at all (rank 0, not quiet); the run's shape: `steps` in each pass, the
    // passes' overlap in run order, `sizes` run in turn; `already_done`: the steps (over every pass
    // and size) a resumed run did before it stopped (counted as done, not timed).
    Progress(bool enabled, std::int64_t steps, std::vector<bool> passes, std::int64_t sizes,
             std::int64_t already_done = 0);
    // One more step done; prints when the line is due.
    void step_done();
    // A run with a duration (seconds from the start; 0: none): the time left is at most what
    // remains of it.
    void end_by(double duration_s);
    // The pass ended before its steps did (its share of the duration was up).
    void pass_ended();

  private:
    bool enabled_, in_place_;
    std::int64_t steps_;
    std::vector<bool> passes_;
    std::int64_t sizes_, total_, first_, done_;
    std::chrono::steady_clock::time_point start_, last_;
    double duration_s_ = 0;
};

}  // namespace gpurelay
