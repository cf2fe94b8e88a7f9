// The ceilings measured in the same launch (calibrate = true), and each phase of a pass held
// against them as a fraction of the ceiling's speed (1: at the ceiling).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "mpi/wait.hpp"
#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio(double ceiling_ms, double ms) { return ms > 0 ? ceiling_ms / ms : kNaN; }

}  // namespace

Ceilings summarize_ceilings(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                            const PassResult& measured) {
    Ceilings ceilings;
    const Deadline bound("the reductions of the ceilings' figures");
    // Collective: every rank knows alike whether any was measured.
    int any = measured.end_step > 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MIN, comm);
    if (any == 0) return ceilings;
    const PassSummary s = summarize_pass(comm, config, placement, measured);
    ceilings.measured = true;
    ceilings.transfer_ms = s.transfer_ms;
    ceilings.a_copy_ms = s.phase(Phase::a).median;
    ceilings.b_copy_ms = s.phase(Phase::b).median;
    ceilings.c_ms = s.phase(Phase::c).median;
    for (std::size_t h = 0; config.pattern == Pattern::relay && h < s.pairs.size(); ++h)
        ceilings.hop_transfer_ms.push_back(s.pairs[h].transfer_ms);
    double cost = measured.timed_wall_ms;
    MPI_Allreduce(MPI_IN_PLACE, &cost, 1, MPI_DOUBLE, MPI_MAX, comm);
    ceilings.cost_ms = cost;
    return ceilings;
}

// A writes the tensor (N bytes) where a copy reads and writes it (2N), as the kernel benchmarks
// count them; B reads and writes it.
CeilingRatios against_ceilings(const PassSummary& pass, const Ceilings& c) {
    if (!c.measured) return {kNaN, kNaN, kNaN, kNaN};
    return {ratio(c.transfer_ms, pass.transfer_ms),
            ratio(c.a_copy_ms, 2 * pass.phase(Phase::a).median),
            ratio(c.b_copy_ms, pass.phase(Phase::b).median),
            ratio(c.c_ms, pass.phase(Phase::c).median)};
}

namespace {

// What keeps an attribution's terms from explaining the step ("" when they do).
std::string attribution_flaw(const OverlapAttribution& a) {
    const double share = kAttributionRestShare * a.step_ms;
    std::string flaw;
    auto add = [&](const std::string& part) { flaw += (flaw.empty() ? "" : "; ") + part; };
    // Said without a negative time: terms that overshoot the step add up to more than it.
    if (a.rest_ms > share) {
        add("they leave " + number_text("{:.4f}", a.rest_ms) +
            " ms to the rest, over a quarter of the step");
    } else if (a.rest_ms < -share) {
        add("they add up to " + number_text("{:.4f}", -a.rest_ms) +
            " ms more than the step, over a quarter of it");
    }
    if (a.c_slowdown_ms < -share) {
        add("C would run " + number_text("{:.4f}", -a.c_slowdown_ms) +
            " ms faster beside the transfer "
            "than alone");
    }
    if (a.transfer_slowdown_ms < -share) {
        add("the transfer would run " + number_text("{:.4f}", -a.transfer_slowdown_ms) +
            " ms faster beside C, A and B than bare");
    }
    if (kModelBeatenFactor * a.step_ms <= a.perfect_ms) {
        add("the step beats perfect overlap " + number_text("{:.2f}", a.perfect_ms / a.step_ms) +
            "x");
    }
    return flaw;
}

}  // namespace

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

void print_overlap_attribution(std::FILE* out, const RunSummary& s) {
    const OverlapAttribution a = attribute_overlap(s);
    if (!a.measured) return;
    if (a.explains) {
        fmt::print(
            out,
            "  overlap, attributed: step {:.4f} ms = perfect overlap {:.4f} + C slower beside "
            "the transfer {:+.4f} + the transfer slower beside C, A and B {:+.4f} + the rest "
            "(ordering, launches, the host) {:+.4f}\n",
            a.step_ms, a.perfect_ms, a.c_slowdown_ms, a.transfer_slowdown_ms, a.rest_ms);
        return;
    }
    // Terms that cancel explain nothing: say what they cannot explain, and the likely cause.
    const std::string cause = waiting_cause(s);
    fmt::print(out,
               "  overlap, not attributed: the phase medians against the ceilings cannot "
               "explain the overlapped step {:.4f} ms ({}){}{}\n",
               a.step_ms, a.why_not, cause.empty() ? "" : "; ", cause);
}

void print_ceilings(std::FILE* out, const RunSummary& s, const PassSummary& pass) {
    const Ceilings& c = s.ceilings;
    if (!c.measured) return;
    const CeilingRatios r = against_ceilings(pass, c);
    // A transfer that measured waiting is no fraction of the link's speed.
    fmt::print(out,
               "  against this launch's ceilings (measured alone, {:.1f} ms): transfer {} ({:.4f} "
               "ms)",
               c.cost_ms,
               transfer_is_waiting(s, pass)
                   ? "measured waiting, not moving (no fraction of the bare transfer)"
                   : (number_text("{:.2f}", r.transfer) + " of the bare transfer"),
               c.transfer_ms);
    if (!std::isnan(r.a)) fmt::print(out, "; A {:.2f} of a copy", r.a);
    if (!std::isnan(r.b)) fmt::print(out, "; B {:.2f} of a copy", r.b);
    if (!std::isnan(r.c)) fmt::print(out, "; C {:.2f} of C alone ({:.4f} ms)", r.c, c.c_ms);
    fmt::print(out, "\n");
}

}  // namespace gpurelay
