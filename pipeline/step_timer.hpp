// The step timer: the events that time a step's phases and its end, in a ring of R sets read back
// about R steps later, and the NVTX ranges; what the timing mode, retire groups and graph
// captures change is decided here, the schedule only opening one PhaseScope per phase.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "pipeline/plan.hpp"

namespace gpurelay {

// Ring slots of timing events and host counters: the fewest that meet the ring rule
// (step_timer.cpp), and the check that throws, naming the clause that `ring` slots break.
std::size_t timing_ring_size(const PipelineSpec& spec);
void check_timing_ring(const PipelineSpec& spec, std::size_t ring);
// The most steps one end event retires.
std::int64_t retire_group_steps(const PipelineSpec& spec);

// Steps [first, last] whose work is known to be done (first > last: none).
struct RetiredSteps {
    std::int64_t first = 0, last = -1;
};

class StepTimer {
  public:
    StepTimer(Device& device, const PipelineSpec& spec, Role role, std::size_t ring);

    // A new pass: its timing mode from the spec; auto times every phase until decide_timing, at
    // the first timed step (collective over `comm`), samples if the slowest warm-up was short.
    void begin_pass(const PassPlan& plan);
    void decide_timing(double warm_ms, MPI_Comm comm, PassResult& result);
    Timing timing() const { return timing_; }
    std::int64_t timing_every() const { return timing_ == Timing::sampled ? every_ : 0; }

    // Where the timed steps' clock starts (every stream idle): the first timed period's start.
    void start_clock() { clock_start_->record(*plan_->last); }
    // Before eager step s, or the unit of graph steps from s (the timed or untimed graph), is
    // queued: which of its steps time their phases and record their end event.
    void begin_step(std::int64_t s);
    void begin_unit(std::int64_t s, bool timed);
    // After an untimed unit's launch on `stream`: its end event, where its retire group ends.
    void end_unit(std::int64_t s, Stream& stream);
    bool unit_timed(std::int64_t first) const;
    // While capturing the graph of the steps from `first`: what its steps record.
    void begin_capture(std::int64_t first, bool timed) { capture_ = {true, timed, first}; }
    void end_capture() { capture_.active = false; }

    // After step s's last work on `stream` (the rank's last): its end event, if it records one,
    // which the io stream waits on before copying y out.
    void end_step(std::int64_t s, Stream& stream);
    Event& end_event(std::int64_t s) { return *marks_[slot(s)].end; }
    // A stop after step `last` inside a retire group: the group's end, recorded now on `stream`.
    void stop_after(std::int64_t last, Stream& stream);
    // Reads step s's times, when s ends a group (blocking until it has run): the steps retired.
    RetiredSteps retire(std::int64_t s, PassResult& result);
    // Before the steps s .. s + n - 1 are queued, every step up to this one is retired, so the
    // ring slots they record into hold no step, nor group's previous end, still to be read.
    std::int64_t last_to_retire_before(std::int64_t s, std::int64_t n) const {
        return s + n - 1 - static_cast<std::int64_t>(marks_.size()) + retire_group_steps(spec_);
    }

  private:
    friend class PhaseScope;
    struct Marks {  // per ring slot: each timed phase's start and end events, and the step's end
        std::array<std::unique_ptr<Event>, 2 * kPhaseCount> phase;
        std::unique_ptr<Event> end;
        bool phases = false;  // the step in this slot records its phase events
        // The steps of the retire group its end event closes (0: a later step's event does).
        std::int64_t group_steps = 1;
        // Its end was recorded at a stop (stop_after), not after its group: no period.
        bool recorded_at_stop = false;
    };
    std::size_t slot(std::int64_t s) const { return static_cast<std::size_t>(s) % marks_.size(); }
    bool records_end(std::int64_t s) const { return marks_[slot(s)].group_steps != 0; }
    bool phase_timed(std::int64_t s) const;
    bool needs_own_end(std::int64_t s, bool unit) const;
    bool ends_group(std::int64_t s, bool unit) const;
    void mark_ends(std::int64_t s, std::int64_t n, bool each, bool last);
    Event* phase_event(Phase phase, std::int64_t s, bool end);
    bool ranges() const { return !capture_.active; }

    Device& device_;
    const PipelineSpec& spec_;
    bool both_;  // the rank plays both roles, or is a relay's middle stage (it sends after B)
    const PassPlan* plan_ = nullptr;
    Timing timing_ = Timing::phases;
    std::int64_t every_ = 0;
    std::int64_t last_group_end_ = 0;  // the last step queued that records its end event
    struct {
        bool active = false, timed = false;
        std::int64_t first = 0;
    } capture_;
    std::vector<Marks> marks_;
    std::unique_ptr<Event> clock_start_;
};

// One phase of one step on one stream, for the scope's lifetime: its event pair when the step
// times its phases, and its NVTX range (on a host stream, opened and closed by the stream's own
// thread in queue order, so it spans what the events time) unless `runs` is false (a phase that
// queues nothing this run, such as C with c_elements = 0, is timed but shows no range).
class PhaseScope {
  public:
    PhaseScope(StepTimer& timer, Phase phase, std::int64_t step, Stream& stream, bool runs = true);
    ~PhaseScope();
    PhaseScope(const PhaseScope&) = delete;
    PhaseScope& operator=(const PhaseScope&) = delete;

  private:
    StepTimer& timer_;
    Phase phase_;
    std::int64_t step_;
    Stream& stream_;
    bool ranged_;
};

// The host's clock, in milliseconds, that the pass loop times its own work with.
inline double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace gpurelay
