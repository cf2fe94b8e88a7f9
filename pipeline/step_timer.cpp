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

// Ring slots of timing events, host counters and step words: the host reads a step's times
// R-1 steps later, so R >= depth + 2. With graphs R is also a multiple of depth, so that a
// ring slot fixes the tensor slot too and one graph per ring slot serves every step (one per
// distinct pair of slots would be lcm(depth, depth + 2) graphs: 2112 at depth 64). With G =
// graph_steps > 1 (a multiple of depth) R is a multiple of G, at least 3G: a lean unit is read
// back with the end event of the step before it, whose ring slot the unit R - G steps later
// records again, so the host retires a unit before it queues that one (pass_loop.cpp), and
// 3G lets it still queue a unit while the one before runs.
//
// Graphs also hold at least kGraphRingSteps: the host queues a graph step faster than the
// GPU runs it, so it waits when it retires, and a wait that sleeps lasts at least the timer
// slack (~50 µs). With only depth + 2 steps ahead the GPU could run dry during that sleep (on an
// H200, 4 KiB graph steps: 14 µs of the host's 22 µs a step went to waiting).
std::size_t pipeline_detail::timing_ring_size(const Config& cfg) {
    constexpr std::size_t kGraphRingSteps = 16;
    const auto d = static_cast<std::size_t>(cfg.depth);
    const auto g = static_cast<std::size_t>(cfg.graph_steps);
    if (!cfg.graphs) return d + 2;
    const std::size_t least = std::max(d + 2, kGraphRingSteps);
    if (g == 1) return (least + d - 1) / d * d;  // the least multiple of d >= that
    return g * std::max<std::size_t>(3, (least + g - 1) / g);
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

// Reads step s's times and counts (the host blocks here only if the GPU is R-1 steps behind).
// Steps that time no phase keep NaN there; every step has its period (but a pass's first). The
// steps of a lean graph unit are read together, when its last step is: each gets the unit's
// period over G (its steps run back to back inside one graph, and only the unit ends with an
// event).
void Pipeline::Impl::retire(std::int64_t s, PassResult& result) {
    StepMarks& m = marks[static_cast<std::size_t>(s) % ring];
    if (m.covers == 0) return;  // inside a lean unit: read with the unit's last step
    const std::int64_t first = s - m.covers + 1;
    m.end->synchronize();
    double period = kNaN;
    if (first > result.first_step) {
        const StepMarks& before = marks[static_cast<std::size_t>(first - 1) % ring];
        period = m.end->elapsed_ms_since(*before.end) / static_cast<double>(m.covers);
    }
    for (std::int64_t j = first; j <= s; ++j) read_counts(j, result);
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
