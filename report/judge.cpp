// The judgement of every figure (judge.hpp).
#include "report/judge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/number_text.hpp"

namespace gpurelay {
namespace {

// A phase at most this much faster than its ceiling, or a serial phase this much slower than the
// step, is noise of the two measurements.
constexpr double kCeilingTolerance = 1.05;
// Without ceilings measured (calibrate = false, launch = "device"), a rate is held to this many
// GB/s: beyond any memory a host or GPU has (an H200's 4.8 TB/s, a B200's 8 TB/s).
constexpr double kRateBoundGbps = 20000;
// A transfer under this share of its bare transfer's speed on an oversubscribed CPU path spent
// nine tenths of its time or more waiting for a core.
constexpr double kWaitingCeilingShare = 0.1;

// "A", "C", "B"; "the wait", "the recv".
std::string phase_word(Phase phase) {
    const std::string name = kPhases[index_of(phase)].name;
    return name.size() == 1 ? std::string(1, static_cast<char>(std::toupper(name[0])))
                            : "the " + name;
}

// A pass's phases as fractions of their ceilings' speed (1: at the ceiling; NaN: not measured).
struct CeilingRatios {
    double transfer, a, b, c;
};
double ratio(double ceiling_ms, double ms) { return ms > 0 ? ceiling_ms / ms : kNaN; }
// A writes the tensor (N bytes) where a copy reads and writes it (2N), as the kernel benchmarks
// count them; B reads and writes it.
CeilingRatios against_ceilings(const PassSummary& pass, const Ceilings& c) {
    if (!c.measured) return {kNaN, kNaN, kNaN, kNaN};
    return {ratio(c.transfer_ms, pass.transfer_ms),
            ratio(c.a_copy_ms, 2 * pass.phase(Phase::a).median),
            ratio(c.b_copy_ms, pass.phase(Phase::b).median),
            ratio(c.c_ms, pass.phase(Phase::c).median)};
}

// The transfer measured waiting rather than moving: longer than its own step, or on an
// oversubscribed CPU path under kWaitingCeilingShare of its bare transfer's speed.
std::string transfer_waits(const RunSummary& s, const PassSummary& p) {
    if (s.config.launch == Launch::device) return "";
    const double step = p.phase(Phase::step).median;
    if (std::isfinite(step) && p.transfer_ms > step) return "longer than its own step";
    if (!s.ceilings.measured || oversubscribed_hosts(s).empty()) return "";
    const double share = against_ceilings(p, s.ceilings).transfer;
    if (!(share < kWaitingCeilingShare)) return "";
    return fmt::format("at {:.2g}% of its bare transfer's speed", 100 * share);
}

double perfect_overlap_ms(const RunSummary& s) {
    const OverlapAttribution a = attribute_overlap(s);
    return a.measured ? a.perfect_ms : s.overlap_ideal_ms;
}

// --- The rules that make the phase times unreadable: what the run shows, "" when not ---------

std::string oversubscription(const RunSummary& s) {
    const std::vector<HostLoad> loads = oversubscribed_hosts(s);
    if (loads.empty()) return "";
    const HostLoad& load = loads.front();
    return fmt::format("{} busy threads on {} cores of {}{} (CPU path): they measure the scheduler",
                       load.threads, load.cores, load.host,
                       loads.size() > 1 ? fmt::format(" and {} more hosts", loads.size() - 1) : "");
}

// The fastest phase against its ceiling, said without the ratio: no fraction of a ceiling over
// the tolerance is shown, even as a reason (the JSON's figures keep it).
std::string beats_ceiling(const RunSummary& s) {
    if (!s.ceilings.measured) return "";
    double fastest = kCeilingTolerance;
    std::string said;
    for (const PassSummary& p : s.passes) {
        auto consider = [&](double ratio, const std::string& phase, const char* ceiling) {
            if (!(ratio > fastest)) return;
            fastest = ratio;
            said = fmt::format("{} ran faster than {}, its ceiling, in the {} pass", phase, ceiling,
                               pass_name(p.overlap));
        };
        const CeilingRatios r = against_ceilings(p, s.ceilings);
        consider(r.transfer, "the transfer", "the bare transfer");
        consider(r.a, "A", "a copy");
        consider(r.b, "B", "a copy");
        consider(r.c, "C", "C alone");
        for (std::size_t h = 0; h < p.pairs.size() && h < s.ceilings.hop_transfer_ms.size(); ++h) {
            consider(s.ceilings.hop_transfer_ms[h] / p.pairs[h].transfer_ms,
                     "hop " + std::to_string(p.pairs[h].pair) + "'s transfer", "its bare transfer");
        }
    }
    return said;
}

std::string beats_model(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0 &&
            kModelBeatenFactor * p.time_per_step_ms <= p.step_bound_ms) {
            return fmt::format("the {} step beats its step model {:.2f}x", pass_name(p.overlap),
                               p.step_bound_ms / p.time_per_step_ms);
        }
    }
    const double perfect = perfect_overlap_ms(s), step = s.main_pass().time_per_step_ms;
    if (s.overlap_speedup > 0 && kModelBeatenFactor * step <= perfect)
        return fmt::format("the overlapped step beats perfect overlap {:.2f}x", perfect / step);
    return "";
}

std::string waiting_transfer(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        if (const std::string how = transfer_waits(s, p); !how.empty())
            return fmt::format("the {} transfer measured waiting ({})", pass_name(p.overlap), how);
    }
    return "";
}

std::string overlap_contradiction(const RunSummary& s) {
    const double perfect = perfect_overlap_ms(s), step = s.main_pass().time_per_step_ms;
    if (!(s.overlap_speedup > 0 && s.overlap_speedup < 1.0 && step < perfect)) return "";
    return "overlap made the step slower, yet the overlapped step beats perfect overlap";
}

// The phases a step's period holds in series on its rank: launch = "device", the consumer role's
// wait and B (C runs beside the roles); else C, the wait and B, after the receive with overlap off.
std::vector<Phase> serial_phases(const RunSummary& s, const PassSummary& p) {
    if (s.config.launch == Launch::device) return {Phase::wait, Phase::b};
    if (p.overlap) return {Phase::c, Phase::wait, Phase::b};
    return {Phase::recv, Phase::c, Phase::wait, Phase::b};
}

// A period holds every serial phase of its step, so none is shorter than their shortest; a retire
// group's average period is no shorter than the average of its steps' phases either.
std::string step_below_phase(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        const PhaseStats& step = p.phase(Phase::step);
        for (const Phase phase : serial_phases(s, p)) {
            const PhaseStats& st = p.phase(phase);
            if (!(step.min * kCeilingTolerance < st.min)) continue;
            return fmt::format(
                "the {} step's shortest period, {} ms, is below {}'s shortest, {} ms, which runs "
                "in series with it{}",
                pass_name(p.overlap), number_text("{:.4g}", step.min), phase_word(phase),
                number_text("{:.4g}", st.min),
                p.grouped_steps > 0 ? " (a retire group's steps get its average period, which "
                                      "cannot be below it either)"
                                    : "");
        }
    }
    return "";
}

// A serial phase's median above the step's, their 95% intervals apart (or, without intervals,
// over kCeilingTolerance apart).
std::string phase_above_step(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        const PhaseStats& step = p.phase(Phase::step);
        const double step_hi = std::isnan(step.median_hi) ? step.median : step.median_hi;
        for (const Phase phase : serial_phases(s, p)) {
            const PhaseStats& st = p.phase(phase);
            const double phase_lo =
                std::isnan(st.median_lo) ? st.median / kCeilingTolerance : st.median_lo;
            if (!(phase_lo > step_hi)) continue;
            return fmt::format(
                "the {} pass's {} median, {} ms, is above its step's, {} ms, which holds it",
                pass_name(p.overlap), phase_word(phase), number_text("{:.4g}", st.median),
                number_text("{:.4g}", step.median));
        }
    }
    return "";
}

constexpr const char* kPhaseFigures = "every figure built on phase times (OUTPUT.md lists them)";
constexpr const char* kNothing = "nothing: said beside the speedup";

// What each rule means is OUTPUT.md's table of rules (a test holds the two together).
const Rule kRules[] = {
    {"oversubscribed", kPhaseFigures, oversubscription},
    {"beats_ceiling", kPhaseFigures, beats_ceiling},
    {"beats_model", kPhaseFigures, beats_model},
    {"transfer_waiting", kPhaseFigures, waiting_transfer},
    {"overlap_contradiction", kPhaseFigures, overlap_contradiction},
    {"step_below_phase", kPhaseFigures, step_below_phase},
    {"phase_above_step", kPhaseFigures, phase_above_step},
    {"no_transfer", "the transfer's time and rate, algbw, busbw and each link's rate"},
    {"above_ceiling", "that rate"},
    {"not_explained", "the attribution"},
    {"few_steps", "the overlap speedup"},
    {"unstable_pass", kNothing},
    {"phases_unreadable", kNothing},
    {"no_difference", kNothing},
};

// --- The figures -------------------------------------------------------------------------------

using Run = const RunSummary&;
using Pass = const PassSummary&;

double tensor_bytes(Run s) { return static_cast<double>(s.config.tensor_bytes()); }

Measured median_of(Pass p, Phase phase) {
    const PhaseStats& st = p.phase(phase);
    return {st.median, st.median_lo, st.median_hi};
}

// `bytes` over a time and its interval, in GB/s (the interval's ends swap).
Measured rate(double bytes, const Measured& ms) {
    auto gbps = [&](double t) { return t > 0 ? bytes / (t * 1e6) : kNaN; };
    return {gbps(ms.value), gbps(ms.hi), gbps(ms.lo)};
}

Measured transfer(Run, Pass p) { return {p.transfer_ms, p.transfer_lo_ms, p.transfer_hi_ms}; }

Measured scaled(const Measured& m, double f) { return {f * m.value, f * m.lo, f * m.hi}; }

Measured handoff(Run s, Pass p) {
    return s.config.launch == Launch::device ? scaled(transfer(s, p), 1e3) : Measured{};
}

Measured transfer_rate(Run s, Pass p) { return rate(tensor_bytes(s), transfer(s, p)); }

Measured bus_rate(Run s, Pass p) {
    return scaled(transfer_rate(s, p), bus_factor(s.config.pattern, s.group_size));
}

Measured c_rate(Run s, Pass p) {
    const double iterations =
        static_cast<double>(s.config.c_elements) * static_cast<double>(s.config.c_iterations);
    return iterations > 0 ? rate(iterations, median_of(p, Phase::c)) : Measured{};
}

Measured relay_period(Run, Pass p) {
    return {p.relay ? p.time_per_step_ms / slowest_hop_ms(p) : kNaN};
}

// The ceilings a rate is held to, in GB/s as it counts bytes: a copy of the tensor in this
// launch's memory (the faster side's), which no byte beats; a write (A) or a read and a write (B)
// at most the copy's traffic. Without ceilings measured, kRateBoundGbps.
double copy_gbps(Run s, double copy_ms, double bytes_per_tensor) {
    if (!s.ceilings.measured || !(copy_ms > 0)) return kRateBoundGbps;
    return bytes_per_tensor * tensor_bytes(s) / (copy_ms * 1e6);
}
double fastest_copy_ms(Run s) { return std::fmin(s.ceilings.a_copy_ms, s.ceilings.b_copy_ms); }
double link_ceiling(Run s) { return copy_gbps(s, fastest_copy_ms(s), 1); }
double bus_ceiling(Run s) {
    return link_ceiling(s) * std::max(1.0, bus_factor(s.config.pattern, s.group_size));
}
double aggregate_ceiling(Run s) { return link_ceiling(s) * std::max(1, s.pairs); }
double a_ceiling(Run s) { return copy_gbps(s, s.ceilings.a_copy_ms, 2); }
double b_ceiling(Run s) { return copy_gbps(s, s.ceilings.b_copy_ms, 2); }

// What withholds a figure besides its ceiling: nothing (the step's), the phase times' reading, or
// that and launch = "device" (the transfer's).
enum class Basis { step, phases, transfer };

struct PassFigureRow {
    FigureName name;
    Basis basis;
    double (*ceiling)(Run);  // GB/s no value may pass; nullptr: not a rate of bytes
    Measured (*measure)(Run, Pass);
};
Measured one(double value) { return {value}; }
// clang-format off
const PassFigureRow kPassFigureRows[] = {
    {{"time_per_step_ms", "ms"}, Basis::step, nullptr,
     [](Run, Pass p) { return median_of(p, Phase::step); }},
    {{"mean_step_ms", "ms"}, Basis::step, nullptr, [](Run, Pass p) { return one(p.mean_step_ms); }},
    {{"steps_per_s", "1/s"}, Basis::step, nullptr, [](Run, Pass p) { return one(p.steps_per_s); }},
    {{"transfer_ms", "ms"}, Basis::transfer, nullptr, transfer},
    {{"handoff_us", "µs"}, Basis::phases, nullptr, handoff},
    {{"transfer_gbps", "GB/s"}, Basis::transfer, link_ceiling, transfer_rate},
    {{"busbw_gbps", "GB/s"}, Basis::transfer, bus_ceiling, bus_rate},
    {{"aggregate_gbps", "GB/s"}, Basis::phases, aggregate_ceiling, [](Run s, Pass p) {
         return rate(tensor_bytes(s) * std::max(1, s.pairs), median_of(p, Phase::step)); }},
    {{"a_gbps", "GB/s"}, Basis::phases, a_ceiling,
     [](Run s, Pass p) { return rate(tensor_bytes(s), median_of(p, Phase::a)); }},
    {{"b_gbps", "GB/s"}, Basis::phases, b_ceiling,
     [](Run s, Pass p) { return rate(2 * tensor_bytes(s), median_of(p, Phase::b)); }},
    {{"c_giter_per_s", "Giter/s"}, Basis::phases, nullptr, c_rate},
    {{"step_bound_ms", "ms"}, Basis::phases, nullptr, [](Run, Pass p) { return one(p.step_bound_ms); }},
    {{"transfer_vs_ceiling", ""}, Basis::transfer, nullptr,
     [](Run s, Pass p) { return one(against_ceilings(p, s.ceilings).transfer); }},
    {{"a_vs_copy", ""}, Basis::phases, nullptr,
     [](Run s, Pass p) { return one(against_ceilings(p, s.ceilings).a); }},
    {{"b_vs_copy", ""}, Basis::phases, nullptr,
     [](Run s, Pass p) { return one(against_ceilings(p, s.ceilings).b); }},
    {{"c_vs_alone", ""}, Basis::phases, nullptr,
     [](Run s, Pass p) { return one(against_ceilings(p, s.ceilings).c); }},
    {{"relay_period_over_slowest_hop", "x"}, Basis::phases, nullptr, relay_period},
};
// clang-format on
static_assert(std::size(kPassFigureRows) == kPassFigCount, "a row per PassFig, in its order");

// The run's figures but the speedup, each built on phase times (the writer waits for a core too);
// an attribution's term is withheld where the attribution explains nothing.
using A = OverlapAttribution;
struct RunFigureRow {
    FigureName name;
    double (*measure)(Run);
    double A::*term;
};
// clang-format off
const RunFigureRow kRunFigureRows[] = {
    {{"overlap_speedup", "x"}, nullptr, nullptr},
    {{"overlap_ideal_ms", "ms"},
     [](Run s) { return s.overlap_speedup > 0 ? perfect_overlap_ms(s) : kNaN; }, nullptr},
    {{"overlap_attribution_step_ms", "ms"}, nullptr, &A::step_ms},
    {{"overlap_attribution_perfect_overlap_ms", "ms"}, nullptr, &A::perfect_ms},
    {{"overlap_attribution_c_slowdown_ms", "ms"}, nullptr, &A::c_slowdown_ms},
    {{"overlap_attribution_transfer_slowdown_ms", "ms"}, nullptr, &A::transfer_slowdown_ms},
    {{"overlap_attribution_rest_ms", "ms"}, nullptr, &A::rest_ms},
    {{"write_gbps", "GB/s"},
     [](Run s) { return s.config.write != WriteMode::none ? s.write_gbps : kNaN; }, nullptr},
};
// clang-format on
static_assert(std::size(kRunFigureRows) == kRunFigCount, "a row per RunFig, in its order");

void withhold(Figure& f, const Rule& by, std::string why) {
    if (f.withheld_by != nullptr) return;  // the first rule that applies says why
    f.withheld_by = &by;
    f.why = std::move(why);
}

void hold_to_ceiling(Figure& f, double ceiling, const std::string& what) {
    if (!(f.value > kCeilingTolerance * ceiling)) return;
    // Said without the rate: a figure withheld is shown nowhere, not even as a reason.
    withhold(f, rule("above_ceiling"),
             fmt::format("{} is above its ceiling, {} GB/s", what, number_text("{:.4g}", ceiling)));
}

void judge_basis(Figure& f, Basis basis, Run s, const Judgement& j) {
    if (basis == Basis::transfer && s.config.launch == Launch::device) {
        withhold(
            f, rule("no_transfer"),
            "launch = \"device\": A writes straight into the peer's slot, so there is no "
            "transfer to time or rate; the hand-off is a latency, A's rate the rate the tensor "
            "reaches the peer");
    }
    if (basis != Basis::step && !j.readable())
        withhold(f, *j.unreadable.front().rule, j.unreadable.front().text);
}

PassJudgement judge_pass(Run s, Pass p, const Judgement& j) {
    PassJudgement pj;
    for (std::size_t i = 0; i < kPassFigCount; ++i) {
        const PassFigureRow& row = kPassFigureRows[i];
        Figure& f = pj.figures[i];
        static_cast<Measured&>(f) = row.measure(s, p);
        judge_basis(f, row.basis, s, j);
        if (row.ceiling != nullptr) hold_to_ceiling(f, row.ceiling(s), row.name.name);
    }
    for (const PairFigures& link : p.pairs) {
        Figure f;
        f.value = link.transfer_gbps;
        judge_basis(f, Basis::transfer, s, j);
        hold_to_ceiling(f, link_ceiling(s), "the link's rate");
        pj.links.push_back(std::move(f));
    }
    for (std::size_t h = 0; h < p.pairs.size() && h < s.ceilings.hop_transfer_ms.size(); ++h) {
        Figure f;
        f.value = s.ceilings.hop_transfer_ms[h] / p.pairs[h].transfer_ms;
        judge_basis(f, Basis::phases, s, j);
        pj.hops.push_back(std::move(f));
    }
    return pj;
}

// The speedup: the off pass's median period over the on pass's; its interval from each median's
// 97.5% interval (together they hold both medians with 0.975^2 > 95%).
Figure speedup(Run s) {
    Figure f;
    if (s.overlap_speedup <= 0) return f;
    const PhaseStats& off = s.passes.front().phase(Phase::step);
    const PhaseStats& on = s.passes.back().phase(Phase::step);
    f.value = s.overlap_speedup;
    f.lo = off.median_lo_975 / on.median_hi_975;
    f.hi = off.median_hi_975 / on.median_lo_975;
    if (!f.has_interval()) {
        withhold(f, rule("few_steps"),
                 fmt::format("{} and {} timed steps", s.passes.front().timed_steps,
                             s.passes.back().timed_steps));
    }
    return f;
}

std::vector<Finding> speedup_notes(Run s, const Figure& f, const Judgement& j) {
    std::vector<Finding> notes;
    if (!f.shown()) return notes;
    std::vector<std::string> unstable;
    for (const PassSummary& p : s.passes)
        if (step_stability(p).unstable) unstable.push_back(pass_name(p.overlap));
    if (!unstable.empty()) {
        notes.push_back({&rule("unstable_pass"), unstable.size() == 1
                                                     ? "the " + unstable[0] + " pass is UNSTABLE"
                                                     : "both passes are UNSTABLE"});
    }
    if (!j.readable())
        notes.push_back({&rule("phases_unreadable"), "the phase times cannot be read"});
    if (f.lo <= 1.0 && 1.0 <= f.hi)
        notes.push_back({&rule("no_difference"), "no measurable difference"});
    return notes;
}

void judge_run(Run s, Judgement& j) {
    j.run[static_cast<std::size_t>(RunFig::speedup)] = speedup(s);
    const OverlapAttribution a = attribute_overlap(s);
    for (std::size_t i = 1; i < kRunFigCount; ++i) {
        const RunFigureRow& row = kRunFigureRows[i];
        Figure& f = j.run[i];
        f.value = row.term == nullptr ? row.measure(s) : a.measured ? a.*row.term : kNaN;
        judge_basis(f, Basis::phases, s, j);
        if (row.term && a.measured && !a.explains) withhold(f, rule("not_explained"), a.why_not);
    }
    j.speedup_notes = speedup_notes(s, j[RunFig::speedup], j);
}

std::string joined(const std::vector<Finding>& findings, bool codes, const char* separator) {
    std::string text;
    for (const Finding& f : findings)
        text += (text.empty() ? "" : separator) + (codes ? std::string(f.rule->code) : f.text);
    return text;
}

std::string attribution_flaw(const OverlapAttribution& a) {
    const double share = kAttributionRestShare * a.step_ms;
    std::vector<std::string> flaws;
    // Said without a negative time: terms that overshoot the step add up to more than it.
    if (a.rest_ms > share)
        flaws.push_back(
            fmt::format("they leave {:.4f} ms to the rest, over a quarter of the step", a.rest_ms));
    else if (a.rest_ms < -share)
        flaws.push_back(fmt::format(
            "they add up to {:.4f} ms more than the step, over a quarter of it", -a.rest_ms));
    if (a.c_slowdown_ms < -share)
        flaws.push_back(fmt::format("C would run {:.4f} ms faster beside the transfer than alone",
                                    -a.c_slowdown_ms));
    if (a.transfer_slowdown_ms < -share)
        flaws.push_back(
            fmt::format("the transfer would run {:.4f} ms faster beside C, A and B than bare",
                        -a.transfer_slowdown_ms));
    if (kModelBeatenFactor * a.step_ms <= a.perfect_ms)
        flaws.push_back(
            fmt::format("the step beats perfect overlap {:.2f}x", a.perfect_ms / a.step_ms));
    return fmt::format("{}", fmt::join(flaws, "; "));
}

}  // namespace

std::span<const Rule> judgement_rules() { return kRules; }

const Rule& rule(const char* code) {
    for (const Rule& r : kRules)
        if (std::strcmp(r.code, code) == 0) return r;
    throw std::logic_error(std::string("no judgement rule ") + code);
}

const FigureName& figure_name(PassFig f) {
    return kPassFigureRows[static_cast<std::size_t>(f)].name;
}
const FigureName& figure_name(RunFig f) { return kRunFigureRows[static_cast<std::size_t>(f)].name; }

std::string Judgement::codes() const { return joined(unreadable, true, ";"); }
std::string Judgement::text() const { return joined(unreadable, false, "; "); }

OverlapAttribution attribute_overlap(const RunSummary& s) {
    OverlapAttribution a;
    if (!s.ceilings.measured || s.overlap_speedup <= 0) return a;
    const PassSummary& off = s.passes.front();
    const PassSummary& on = s.passes.back();
    const Ceilings& c = s.ceilings;
    PhaseMedians alone = phase_medians(off);
    alone.transfer = c.transfer_ms;
    if (s.config.c_elements > 0) alone.c = c.c_ms;
    a.measured = true;
    a.step_ms = on.time_per_step_ms;
    a.perfect_ms = step_bound_ms(alone, s.config.depth, true);
    a.c_slowdown_ms = s.config.c_elements > 0 ? on.phase(Phase::c).median - c.c_ms : 0;
    a.transfer_slowdown_ms = on.transfer_ms - c.transfer_ms;
    a.rest_ms = a.step_ms - a.perfect_ms - a.c_slowdown_ms - a.transfer_slowdown_ms;
    a.why_not = attribution_flaw(a);
    a.explains = a.why_not.empty();
    return a;
}

int slowest_hop(const PassSummary& pass) {
    int slowest = -1;
    for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
        const double t = pass.pairs[i].transfer_ms;
        if (!std::isnan(t) &&
            (slowest < 0 || t > pass.pairs[static_cast<std::size_t>(slowest)].transfer_ms))
            slowest = static_cast<int>(i);
    }
    return slowest;
}

double slowest_hop_ms(const PassSummary& pass) {
    const int hop = slowest_hop(pass);
    return hop < 0 ? kNaN : pass.pairs[static_cast<std::size_t>(hop)].transfer_ms;
}

Judgement judge(const RunSummary& s) {
    Judgement j;
    if (s.passes.empty()) return j;
    for (const Rule& r : kRules) {
        if (r.finding == nullptr) continue;
        if (std::string found = r.finding(s); !found.empty())
            j.unreadable.push_back({&r, std::move(found)});
    }
    for (const PassSummary& p : s.passes) j.passes.push_back(judge_pass(s, p, j));
    judge_run(s, j);
    return j;
}

}  // namespace gpurelay
