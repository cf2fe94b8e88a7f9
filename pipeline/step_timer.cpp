// The step timer: a ring of R sets of events, one set a step, read back R-1 steps after the step
// was queued, so the host never waits on work it has just queued and host memory does not
// grow with the steps; which steps record the phase events (the timing mode), and auto's choice.
#include <algorithm>
#include <cmath>
#include <limits>

#include "comm/mpi_error.hpp"
#include "pipeline/pipeline_impl.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

using pipeline_detail::StepMarks;

// The most steps one end event retires. A step that times its phases or is written records its
// own end event; the others share one per retire group, of kRetireGroupSteps consecutive steps
// from a multiple of it (with graphs, of whole graph units: the least multiple of G that holds as
// many, one unit when G >= kRetireGroupSteps), recorded by the group's last step, and each gets
// the group's period over its steps. On an H200 at 4 KiB, a step's end event and its read-back
// cost an eager step about 3.7 us (of 16-24) and a one-graph step 1.4 us (of 9), by bench_floor's
// variants (docs/PERFORMANCE.md); a group of 4 shares them.
std::int64_t pipeline_detail::retire_group_steps(const Config& cfg) {
    const std::int64_t g = cfg.graphs ? cfg.graph_steps : 1;
    return (kRetireGroupSteps + g - 1) / g * g;
}

// Ring slots of timing events and host counters: the host reads a step's times when its group
// has ended, C = retire_group_steps steps at most after it (the group's end is read against the
// previous group's end, C steps back), so before it queues step s it retires every step up to
// s - R + C (pass_loop.cpp), and R >= depth + 1 + C keeps that depth + 1 steps behind what it
// queues: it never waits on work it has just queued, and host memory does not grow with steps.
//
// With graphs R is also a multiple of depth and of G, so that a ring slot fixes the tensor slot
// too and one graph per ring position serves every step (one per distinct pair of slots would be
// lcm(depth, depth + 2) graphs: 2112 at depth 64); and R >= 3C, so the host can still queue a
// group while the one before runs. Graphs also hold at least kGraphRingSteps: the host queues a
// graph step faster than the GPU runs it, so it waits when it retires, and a wait that sleeps
// lasts at least the timer slack (~50 us); with only depth + 2 steps ahead the GPU could run dry
// during that sleep (on an H200, 4 KiB graph steps: 14 us of the host's 22 us a step went to
// waiting).
std::size_t pipeline_detail::timing_ring_size(const Config& cfg) {
    constexpr std::size_t kGraphRingSteps = 16;
    const auto d = static_cast<std::size_t>(cfg.depth);
    const auto c = static_cast<std::size_t>(retire_group_steps(cfg));
    if (!cfg.graphs) return d + 1 + c;
    const std::size_t least = std::max({d + 2, kGraphRingSteps, 3 * c});
    const std::size_t unit = std::max(d, static_cast<std::size_t>(cfg.graph_steps));
    return (least + unit - 1) / unit * unit;  // the least multiple of the unit >= that
}

// Whether step s records the phase events, by the timing the pass uses: every step, none,
// or every K-th timed step (not the warm-up steps); auto times every phase until it has
// decided, at the first timed step.
bool Pipeline::Impl::phase_timed(std::int64_t s) const {
    switch (pass_timing) {
        case Timing::steps:
            return false;
        case Timing::sampled:
            // From the first timed step on, so that even a short pass has a sample.
            return s >= pass_timed_from && (s - pass_timed_from) % pass_timing_every == 0;
        default:
            return true;
    }
}

// Whether the eager step s, or the graph unit from s (`unit`), records an end event of its own:
// when it times its phases, or when the writer copies out one of its steps (the copy waits for
// that step's end event).
bool Pipeline::Impl::needs_own_end(std::int64_t s, bool unit, const ResultWriter* writer) const {
    const std::int64_t n = unit ? config.graph_steps : 1;
    if (unit ? unit_phased(s) : phase_timed(s)) return true;
    for (std::int64_t j = s; consumer && writer != nullptr && j < s + n; ++j) {
        if (config.writes_step(j)) return true;
    }
    return false;
}

// Whether the eager step s, or the graph unit from s, ends its retire group (records an end
// event at its last step): when it needs its own end event, or its group ends after it.
bool Pipeline::Impl::unit_ends(std::int64_t s, bool unit, const ResultWriter* writer) const {
    return needs_own_end(s, unit, writer) || group_ends_after(s, unit, writer);
}

// Whether the retire group of the eager step s, or of the graph unit from s, ends after it: when
// the group is full (the next step a multiple of retire_group_steps), and before what a group
// must not span: the next step needing its own end event, eager steps and graphs meeting, the
// timed region's start and the pass's end. The cold step is a group of its own.
bool Pipeline::Impl::group_ends_after(std::int64_t s, bool unit, const ResultWriter* writer) const {
    const std::int64_t next = s + (unit ? config.graph_steps : 1);
    if (s == pass_first_step || next >= config.steps || next == pass_timed_from) return true;
    if (next % pipeline_detail::retire_group_steps(config) == 0) return true;
    const bool next_unit = graph_unit_at(next, pass_first_step, pass_timed_from);
    return next_unit != unit || needs_own_end(next, next_unit, writer);
}

// Sets which of the n steps from s record their end event (every one when `each`, else only the
// last when `last`) and how many steps each such event retires.
void Pipeline::Impl::mark_ends(std::int64_t s, std::int64_t n, bool each, bool last) {
    for (std::int64_t j = s; j < s + n; ++j) {
        StepMarks& m = marks[static_cast<std::size_t>(j) % ring];
        m.late = false;
        m.covers = 0;
        if (each || (last && j == s + n - 1)) {
            m.covers = j - last_end;
            last_end = j;
        }
    }
}

// A stop after step `last`, inside a retire group: the group's end event, recorded now on
// `stream` (after everything queued), so that its steps' counts are read; they get no period.
void Pipeline::Impl::end_late(std::int64_t last, Stream& stream) {
    StepMarks& m = marks[static_cast<std::size_t>(last) % ring];
    if (m.covers != 0) return;
    m.end->record(stream);
    m.covers = last - last_end;
    m.late = true;
    last_end = last;
}

// Reads step s's times and counts (the host blocks here only if the GPU is R-1-C steps behind).
// Steps that time no phase keep NaN there; every step has its period (but a pass's first, and
// the steps of a group a stop cut short). The steps of a retire group are read together, when
// its last step is: each gets the group's period over its steps.
void Pipeline::Impl::retire(std::int64_t s, PassResult& result) {
    StepMarks& m = marks[static_cast<std::size_t>(s) % ring];
    if (m.covers == 0) return;  // inside a retire group: read with the group's last step
    const std::int64_t first = s - m.covers + 1;
    m.end->synchronize();
    double period = kNaN;
    if (first > result.first_step && !m.late) {
        const StepMarks& before = marks[static_cast<std::size_t>(first - 1) % ring];
        period = m.end->elapsed_ms_since(*before.end) / static_cast<double>(m.covers);
    }
    for (std::int64_t j = first; j <= s; ++j) {
        read_counts(j, result);
        if (m.covers > 1 && j >= result.timed_from) ++result.grouped_steps;
    }
    StepTimes t;
    t.period = period;
    for (std::int64_t j = first; j < s; ++j) result.steps[static_cast<std::size_t>(j)] = t;
    if (m.phases && producer) {
        t.a = m.a_end->elapsed_ms_since(*m.a_start);
        t.send = m.send_end->elapsed_ms_since(*m.send_start);
    }
    if (m.phases && consumer) {
        if (times_receive()) t.recv = m.recv_end->elapsed_ms_since(*m.recv_start);
        t.c = m.c_end->elapsed_ms_since(*m.c_start);
        t.wait = m.b_start->elapsed_ms_since(*m.c_end);
        t.b = m.b_end->elapsed_ms_since(*m.b_start);
    }
    if (m.phases && s >= result.timed_from) ++result.phase_timed_steps;
    result.steps[static_cast<std::size_t>(s)] = t;
}

// Step j's mismatch counts, once its kernels are done (the end event that covers it is
// reached): final then, and zeroed for the ring slot's next step, queued after this.
void Pipeline::Impl::read_counts(std::int64_t j, PassResult& result) {
    if (!consumer) return;
    Counter* host_counters =
        counters_host.as<Counter>().data() + 2 * (static_cast<std::size_t>(j) % ring);
    result.x_mismatches[static_cast<std::size_t>(j)] = host_counters[0];
    result.c_mismatches[static_cast<std::size_t>(j)] = host_counters[1];
    host_counters[0] = host_counters[1] = 0;
}

// timing = auto, at the first timed step (every stream idle): sampled when the warm-up steps
// were short, on every rank alike (the slowest rank's steps decide). `warm_ms` is this
// rank's time per warm-up step, +inf when there was none to judge from.
void Pipeline::Impl::decide_timing(double warm_ms, PassResult& result) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &warm_ms, 1, MPI_DOUBLE, MPI_MAX, mpi_comm));
    result.timing_judged_ms = std::isinf(warm_ms) ? kNaN : warm_ms;
    if (warm_ms < kTimingAutoBelowMs) {
        pass_timing = Timing::sampled;
        pass_timing_every = kTimingAutoEvery;
    } else {
        pass_timing = Timing::phases;
    }
}

}  // namespace gpurelay
