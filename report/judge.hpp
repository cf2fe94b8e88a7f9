// Every figure gpurelay shows, judged once: a value with its unit, its 95% interval where samples
// give one, and a verdict, shown or withheld by a rule of one table; the outputs render it and
// never decide again. Beside it, the facts it reads.
#pragma once

#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "report/reduce.hpp"

namespace gpurelay {

// A compare run's overlapped step (ms) as perfect overlap (the off medians' step model with the
// transfer and C at their ceilings) + C's slowdown beside the transfer + the transfer's beside C,
// A and B + the rest. `explains` is false (`why_not` says why) where the rest is over
// kAttributionRestShare of the step, a term negative by as much (a phase faster beside the others
// than alone measured waiting), or the step kModelBeatenFactor or more faster than perfect overlap.
struct OverlapAttribution {
    bool measured = false;
    double step_ms = 0, perfect_ms = 0, c_slowdown_ms = 0, transfer_slowdown_ms = 0, rest_ms = 0;
    bool explains = false;
    std::string why_not;
};
inline constexpr double kAttributionRestShare = 0.25;
inline constexpr double kModelBeatenFactor = 2.0;
OverlapAttribution attribute_overlap(const RunSummary& summary);

// A host whose ranks run more threads than they have cores (the CPU path only).
struct HostLoad {
    std::string host;
    int ranks = 0, threads = 0, cores = 0;
};
std::vector<HostLoad> oversubscribed_hosts(const RunSummary& summary);

// Unstable: p90 over kUnstableStepSpread above the median. Not the cv, which one slow step (a
// flush, a preemption) makes large; slow steps are counted apart.
inline constexpr double kUnstableStepSpread = 0.10;
struct Stability {
    double p90_over_median, cv, max_over_median;
    bool unstable;
};
Stability step_stability(const PassSummary& pass);

// A relay's slowest hop (index into pass.pairs; -1 without) and its median transfer (NaN).
int slowest_hop(const PassSummary& pass);
double slowest_hop_ms(const PassSummary& pass);

// A rule that withholds figures (or is said beside the speedup): its code (the JSON's, the CSV's,
// the file's), what it withholds; for the rules that make the phase times unreadable, `finding`:
// what the run shows ("" when it does not).
struct Rule {
    const char* code;
    const char* withholds;
    std::string (*finding)(const RunSummary&) = nullptr;
};
// Every rule, one table (docs/OUTPUT.md says what each means).
std::span<const Rule> judgement_rules();
const Rule& rule(const char* code);

// A figure as measured, and its 95% interval where the samples give one.
struct Measured {
    double value = kNaN, lo = kNaN, hi = kNaN;
};
// One judged figure, its value as measured whatever the verdict; NaN where the run did not
// measure it (no ceilings or phase times, another pattern's or launch's figure).
struct Figure : Measured {
    const Rule* withheld_by = nullptr;
    std::string why;  // what this run showed, where withheld
    bool measured() const { return !std::isnan(value); }
    bool shown() const { return measured() && withheld_by == nullptr; }
    bool has_interval() const { return !std::isnan(lo) && !std::isnan(hi); }
    double rendered() const { return shown() ? value : kNaN; }
    const char* reason() const { return withheld_by == nullptr ? "" : withheld_by->code; }
};

// A pass's figures, in the order of their table.
enum class PassFig : std::size_t {
    time_per_step,  // the median of the step periods: the one time per step
    mean_step,      // the timed steps' wall time over their count, labelled as a mean
    steps_per_s,    // 1000 / mean_step
    transfer,       // the transfer's median time (launch = "host")
    handoff,        // launch = "device": the publish of a step's arrival, µs
    transfer_rate,  // the tensor over the transfer (nccl-tests' algbw)
    bus_rate,       // that times the bus factor (busbw)
    aggregate_rate,
    a_rate,  // launch = "device": the rate at which the tensor reaches the peer
    b_rate,
    c_rate,
    step_model,
    transfer_vs_ceiling,
    a_vs_copy,
    b_vs_copy,
    c_vs_alone,
    relay_period_over_hop,
    count
};
inline constexpr std::size_t kPassFigCount = static_cast<std::size_t>(PassFig::count);
// The run's figures of a compare run.
enum class RunFig : std::size_t {
    speedup,
    perfect_overlap,
    attributed_step,
    attributed_perfect,
    c_slowdown,
    transfer_slowdown,
    rest,
    write_rate,  // the result writer's, all consumers' bytes over their writing time
    count
};
inline constexpr std::size_t kRunFigCount = static_cast<std::size_t>(RunFig::count);
// A figure's name (the JSON's, the CSV's, the file's) and its unit.
struct FigureName {
    const char* name;
    const char* unit;
};
const FigureName& figure_name(PassFig figure);
const FigureName& figure_name(RunFig figure);

// What a run showed that a rule names.
struct Finding {
    const Rule* rule;
    std::string text;
};

struct PassJudgement {
    std::array<Figure, kPassFigCount> figures;
    std::vector<Figure> links;  // each link's transfer rate (GB/s), as the pass's pairs
    std::vector<Figure> hops;   // a relay's: each hop's transfer against its bare transfer
    const Figure& operator[](PassFig f) const { return figures[static_cast<std::size_t>(f)]; }
};

struct Judgement {
    std::vector<Finding> unreadable;    // why the phase times cannot be read (none: they can)
    std::vector<PassJudgement> passes;  // as the summary's
    std::array<Figure, kRunFigCount> run;
    // Beside a shown speedup: a pass UNSTABLE, the phase times unreadable, no difference.
    std::vector<Finding> speedup_notes;
    bool readable() const { return unreadable.empty(); }
    std::string codes() const;  // the unreadable findings' codes joined by ';'
    std::string text() const;   // their texts joined by "; "
    const Figure& operator[](RunFig f) const { return run[static_cast<std::size_t>(f)]; }
};

// The judgement of every figure of the run (rank 0's summary).
Judgement judge(const RunSummary& summary);

}  // namespace gpurelay
