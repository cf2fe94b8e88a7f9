// The step timer. Step s records into ring slot s mod R and is read back about R steps later, so
// the host never waits on work it has just queued and its memory does not grow with the steps.
//
// Retire groups: a small step's end event and read-back are a sizeable share of it, so steps that
// neither time their phases nor are written share one end event per group of up to C =
// retire_group_steps (with graphs, whole graphs), each getting the group's period over its steps
// (ends_group says where a group must end). A timed graph records every step's end.
#include "pipeline/step_timer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ranges>
#include <string>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {
namespace {

// On a host stream by its thread in queue order; on a CUDA stream now, around the calls that
// queue the phase (Nsight Systems projects them onto the GPU work they launch).
template <class Mark>
void in_stream_order(Device& device, Stream& stream, Mark mark) {
    if (stream.backend() == Backend::host) return device.enqueue_host(mark, stream);
    mark();
}

// In a timed graph every step records its phase events with timing = phases, else only the
// graph's first: a phase-timed step costs a graph twelve event nodes, so sampling one step of a
// sampled graph keeps sampling as cheap per step as it is for eager steps.
bool graph_step_phased(const PipelineSpec& spec, std::int64_t s, std::int64_t first) {
    return spec.timing == Timing::phases || s == first;
}

// --- The ring rule ------------------------------------------------------------------------------

// One clause of the ring rule: R is at least `bound`, or a multiple of it.
struct RingClause {
    const char* rule;  // as a broken rule is reported
    bool multiple;
    std::size_t bound;  // 1 (a multiple) or 0 (at least) where the clause does not apply
};

// The ring rule for a spec, C being retire_group_steps; clauses 2 to 5 apply with graphs only.
// 1. A group's end is read against the one before, C steps back, so before queueing step s the
//    host retires every step up to s - R + C (StepTimer::last_to_retire_before): R >= depth + 1 + C
//    keeps that depth + 1 steps behind what it queues.
// 2, 3. A multiple of depth and of G: a ring slot then fixes the tensor slot too, and one graph per
//    ring position serves every launch there (graph_set.cpp).
// 4. At least 3C: the host can still queue a group while the one before runs.
// 5. At least 16: the host queues graph steps faster than the GPU runs them, and a wait that
//    sleeps lasts at least the timer slack (~50 us), in which fewer steps ahead would run dry.
std::array<RingClause, 5> ring_rule(const PipelineSpec& spec) {
    constexpr std::size_t kGraphRingSteps = 16;
    const auto d = static_cast<std::size_t>(spec.depth);
    const auto g = static_cast<std::size_t>(spec.graph_steps);
    const auto c = static_cast<std::size_t>(retire_group_steps(spec));
    const bool graphs = spec.graphs;
    return {{
        {"at least depth + 1 + C", false, d + 1 + c},
        {"a multiple of depth", true, graphs ? d : 1},
        {"a multiple of graph_steps", true, graphs ? g : 1},
        {"at least 3 x C", false, graphs ? 3 * c : 0},
        {"at least 16", false, graphs ? kGraphRingSteps : 0},
    }};
}

}  // namespace

std::int64_t retire_group_steps(const PipelineSpec& spec) {
    const std::int64_t g = spec.graphs ? spec.graph_steps : 1;
    return (kRetireGroupSteps + g - 1) / g * g;
}

// The fewest slots that meet every clause: the largest bound, rounded up to every multiple.
std::size_t timing_ring_size(const PipelineSpec& spec) {
    std::size_t least = 1, multiple = 1;
    for (const RingClause& clause : ring_rule(spec)) {
        if (clause.multiple) {
            multiple = std::lcm(multiple, clause.bound);
        } else {
            least = std::max(least, clause.bound);
        }
    }
    const std::size_t ring = (least + multiple - 1) / multiple * multiple;
    check_timing_ring(spec, ring);
    return ring;
}

void check_timing_ring(const PipelineSpec& spec, std::size_t ring) {
    for (const RingClause& clause : ring_rule(spec)) {
        if (clause.multiple ? ring % clause.bound == 0 : ring >= clause.bound) continue;
        throw runtime_error("step timer: a ring of " + std::to_string(ring) +
                            " slots breaks the ring rule: " + clause.rule + " (" +
                            std::to_string(clause.bound) + ")");
    }
}

// --- The timer ----------------------------------------------------------------------------------

StepTimer::StepTimer(Device& device, const PipelineSpec& spec, Role role, std::size_t ring)
    : device_(device), spec_(spec), both_(role == Role::both || role == Role::relay), marks_(ring) {
    // The side this rank does not play (either: it plays both; a relay's middle stage runs no A).
    const Side idle = role == Role::producer   ? Side::consumer
                      : role == Role::consumer ? Side::producer
                                               : Side::either;
    for (Marks& m : marks_) {
        for (const PhaseInfo& phase : kPhases) {
            if (phase.phase == Phase::step || phase.side == idle) continue;
            if (phase.phase == Phase::a && role == Role::relay) continue;
            for (int edge = 0; edge < 2; ++edge) {
                m.phase[2 * index_of(phase.phase) + edge] = device.make_event(EventUse::timing);
            }
        }
        m.end = device.make_event(EventUse::timing);
    }
    clock_start_ = device.make_event(EventUse::timing);
}

void StepTimer::begin_pass(const PassPlan& plan) {
    plan_ = &plan;
    timing_ = spec_.timing == Timing::auto_select ? Timing::phases : spec_.timing;
    every_ = spec_.timing_every;
    last_group_end_ = plan.first_step - 1;
}

void StepTimer::decide_timing(double warm_ms, MPI_Comm comm, PassResult& result) {
    const Deadline bound("the reduction that decides the timing mode");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &warm_ms, 1, MPI_DOUBLE, MPI_MAX, comm));
    result.timing_judged_ms = std::isinf(warm_ms) ? StepTimes::kNone : warm_ms;
    timing_ = warm_ms < kTimingAutoBelowMs ? Timing::sampled : Timing::phases;
    if (timing_ == Timing::sampled) every_ = kTimingAutoEvery;
}

// Every step, none, or every K-th timed step (from the first, so that even a short pass has a
// sample); auto times every phase until it has decided.
bool StepTimer::phase_timed(std::int64_t s) const {
    if (timing_ == Timing::steps) return false;
    if (timing_ != Timing::sampled) return true;
    return s >= plan_->timed_from && (s - plan_->timed_from) % every_ == 0;
}

// sampled:K samples every K-th graph, from the first timed one, so that graphs of G >= K steps
// are not all timed; otherwise a graph is timed when any of its steps would be.
bool StepTimer::unit_timed(std::int64_t first) const {
    const std::int64_t g = spec_.graph_steps;
    if (timing_ == Timing::sampled && g > 1) {
        return first >= plan_->timed_from && (first - plan_->timed_from) / g % every_ == 0;
    }
    return std::ranges::any_of(std::views::iota(first, first + g),
                               [&](std::int64_t s) { return phase_timed(s); });
}

// When the step (or the unit from s) times its phases, or the writer copies one of its steps out
// (the copy waits for that step's end event).
bool StepTimer::needs_own_end(std::int64_t s, bool unit) const {
    if (unit ? unit_timed(s) : phase_timed(s)) return true;
    return std::ranges::any_of(std::views::iota(s, s + (unit ? spec_.graph_steps : 1)),
                               [&](std::int64_t j) { return plan_->writes(j); });
}

// Whether the retire group of the step (or unit) from s ends with it: full, or before what a
// group must not span (the next step needing its own end, eager steps and graphs meeting, the
// timed region's start, the pass's end). The cold step is a group of its own.
bool StepTimer::ends_group(std::int64_t s, bool unit) const {
    const std::int64_t next = s + (unit ? spec_.graph_steps : 1);
    if (s == plan_->first_step || next >= spec_.steps || next == plan_->timed_from) return true;
    if (next % retire_group_steps(spec_) == 0) return true;
    const bool next_unit = plan_->graph_unit_at(next);
    return next_unit != unit || needs_own_end(next, next_unit);
}

// Which of the n steps from s record their end event (every one when `each`, else only the last
// when `last`), and how many steps each such event retires.
void StepTimer::mark_ends(std::int64_t s, std::int64_t n, bool each, bool last) {
    for (std::int64_t j = s; j < s + n; ++j) {
        Marks& m = marks_[slot(j)];
        m.recorded_at_stop = false;
        m.group_steps = 0;
        if (each || (last && j == s + n - 1)) {
            m.group_steps = j - last_group_end_;
            last_group_end_ = j;
        }
    }
}

void StepTimer::begin_step(std::int64_t s) {
    marks_[slot(s)].phases = phase_timed(s);
    mark_ends(s, 1, false, needs_own_end(s, false) || ends_group(s, false));
}

void StepTimer::begin_unit(std::int64_t s, bool timed) {
    const std::int64_t g = spec_.graph_steps;
    mark_ends(s, g, timed, !timed && (needs_own_end(s, true) || ends_group(s, true)));
    for (std::int64_t j = s; j < s + g; ++j) {
        marks_[slot(j)].phases = timed && graph_step_phased(spec_, j, s);
    }
}

void StepTimer::end_unit(std::int64_t s, Stream& stream) {
    const std::int64_t last = s + spec_.graph_steps - 1;
    if (!unit_timed(s) && records_end(last)) marks_[slot(last)].end->record(stream);
}

void StepTimer::end_step(std::int64_t s, Stream& stream) {
    const bool records = capture_.active ? capture_.timed : records_end(s);
    if (records) marks_[slot(s)].end->record(stream);
}

void StepTimer::stop_after(std::int64_t last, Stream& stream) {
    if (records_end(last)) return;
    Marks& m = marks_[slot(last)];
    m.end->record(stream);
    m.group_steps = last - last_group_end_;
    m.recorded_at_stop = true;
    last_group_end_ = last;
}

Event* StepTimer::phase_event(Phase phase, std::int64_t s, bool end) {
    const bool phased = capture_.active
                            ? capture_.timed && graph_step_phased(spec_, s, capture_.first)
                            : marks_[slot(s)].phases;
    if (!phased || index_of(phase) >= kPhaseCount) return nullptr;
    if (phase == Phase::recv && !plan_->times_receive) return nullptr;
    return marks_[slot(s)].phase[2 * index_of(phase) + (end ? 1 : 0)].get();
}

// The host blocks here only if the GPU is R - 1 - C steps behind. Steps that time no phase keep
// NaN there; every step has its period, but a pass's first and those of a group a stop cut short.
RetiredSteps StepTimer::retire(std::int64_t s, PassResult& result) {
    Marks& m = marks_[slot(s)];
    if (m.group_steps == 0) return {};  // inside a retire group: read with the group's last step
    const std::int64_t first = s - m.group_steps + 1;
    m.end->synchronize();
    StepTimes t;
    if (first > result.first_step && !m.recorded_at_stop) {
        // The timed steps' first group is read from where the clock started, not from the
        // warm-up's last step: between them lie the ceilings and the barrier.
        Event& before = first == result.timed_from ? *clock_start_ : *marks_[slot(first - 1)].end;
        t.period = m.end->elapsed_ms_since(before) / static_cast<double>(m.group_steps);
    }
    for (std::int64_t j = first; j < s; ++j) result.retire_step(j, t);
    if (m.group_steps > 1) {
        result.grouped_steps +=
            std::max<std::int64_t>(0, s + 1 - std::max(first, result.timed_from));
    }
    if (m.phases) {
        for (const PhaseInfo& phase : kPhases) {
            Event* start = phase_event(phase.phase, s, false);
            if (start == nullptr) continue;
            Event& end = *phase_event(phase.phase, s, true);
            // The step's end is on the consumer's stream, which a rank's send to itself may end
            // after (an MPI send completes once the receiver has the data, not before).
            if (phase.phase == Phase::send && both_) end.synchronize();
            t.*phase.member = end.elapsed_ms_since(*start);
        }
        if (s >= result.timed_from) ++result.phase_timed_steps;
    }
    result.retire_step(s, t);
    return {first, s};
}

PhaseScope::PhaseScope(StepTimer& timer, Phase phase, std::int64_t step, Stream& stream, bool runs)
    : timer_(timer),
      phase_(phase),
      step_(step),
      stream_(stream),
      ranged_(nvtx::kBuilt && runs && timer.ranges()) {
    if (Event* start = timer_.phase_event(phase_, step_, false)) start->record(stream_);
    if (!ranged_) return;
    // Small and trivially copyable, so the queued lambda fits std::function's inline storage
    // and queueing it does not allocate.
    struct Range {
        std::int64_t step;
        Phase phase;
        bool warmup;
        void push() const { nvtx::push_step(info(phase).range, info(phase).colour, step, warmup); }
    } const range{step_, phase_, step_ < timer_.spec_.warmup};
    in_stream_order(timer_.device_, stream_, [range] { range.push(); });
}

PhaseScope::~PhaseScope() {
    if (ranged_) in_stream_order(timer_.device_, stream_, [] { nvtx::pop(); });
    if (Event* end = timer_.phase_event(phase_, step_, true)) end->record(stream_);
}

}  // namespace gpurelay
