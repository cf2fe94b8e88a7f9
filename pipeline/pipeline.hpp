// The producer -> consumer pipeline, the timed work of a run: it queues A, the transfer, C and B
// on their streams in order (step.cpp holds the schedule) and reads back what they measured.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

#include "config/config.hpp"
#include "kernels/kernels.hpp"
#include "mpi/pairing.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/step_record.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_clocks.hpp"
#include "runtime/log_histogram.hpp"
#include "transport/transport.hpp"

namespace gpurelay {

// What one pass (overlap on or off) measured on this rank.
struct PassResult {
    bool overlap = true;
    std::int64_t first_step = 0;  // where this pass started (after a resume, not 0)
    std::int64_t end_step = 0;    // one past the last step run (less than steps if stopped)
    // Whether it ran every step (the device's roles may run ahead of an agreed stop, to the end).
    bool complete = false;
    std::int64_t timed_from = 0;  // first step in the timings (warm-up and cold steps excluded)
    // The timed steps' phase times (a histogram per phase, as kPhases), the slowest steps, the
    // steps the file keeps (warm-up included; no more than step_record's columns), and wrong
    // elements over every step (consumer).
    std::array<LogHistogram, kPhaseCount> phases;
    SlowestSteps slowest;
    RecordedSteps recorded;
    std::uint64_t x_mismatches = 0, c_mismatches = 0;
    double cold_step_ms = 0;         // step 0, from queueing to completion
    double timed_wall_ms = 0;        // the steps after warm-up, until the last one has ended
    std::uint64_t spot_checked = 0;  // host spot-check samples
    std::uint64_t spot_mismatches = 0;
    double write_wait_ms = 0;  // pipeline blocked on the result writer
    // A relay's last stage: from the timed steps' start (every rank idle past a barrier) to the
    // first timed step's B, a tensor's time through every stage (NaN elsewhere, or in a graph).
    double fill_ms = std::numeric_limits<double>::quiet_NaN();
    int graphs_captured = 0;       // graphs = true: CUDA graphs captured after the cold step
    double capture_ms = 0;         // ... and the host time capturing and instantiating them
    std::int64_t graph_steps = 0;  // steps run as graph launches
    // The timing used (auto resolved), K when sampled, what auto judged from (the slowest rank's
    // warm-up step; NaN otherwise), and the timed steps with phase times.
    Timing timing = Timing::phases;
    std::int64_t timing_every = 0;
    double timing_judged_ms = std::numeric_limits<double>::quiet_NaN();
    std::int64_t phase_timed_steps = 0;
    // Timed steps that share a retire group's end event, and the most steps one event retires.
    std::int64_t grouped_steps = 0;
    std::int64_t retire_group_steps = 1;
    // The host thread's time over the timed steps (ms): queueing, reading back (waiting if the
    // GPU is R - 1 steps behind), the stop vote: a small step close to their sum is host-paced.
    double host_queue_ms = 0, host_retire_ms = 0, host_callback_ms = 0;
    // This rank's GPU clock at the timed steps' start and end (unmeasured without NVML).
    ClockSample clocks_start, clocks_end;

    // Step s's times once read back (steps retire in order), and its wrong elements of x and C:
    // into the histograms and the slowest steps when s is timed, the record when it keeps s.
    void retire_step(std::int64_t s, const StepTimes& times);
    void retire_counts(std::int64_t s, Counter x, Counter c);
};

// What a retire group holds at most without graphs (step_timer.cpp): consecutive steps that
// time no phase and are not written share one end event.
inline constexpr std::int64_t kRetireGroupSteps = 4;

// What the ranks agreed after a step (alike on every rank), asked on the host after each step is
// queued: go on; stop the run there (a signal: it resumes from the next); or end the pass there
// (its time is up), its y written as the last's.
enum class AfterStep { go, stop, end };
using StepCallback = std::function<AfterStep(std::int64_t step)>;

// What the pipeline runs: the Config's keys it takes, whole, and what this rank's A makes and B
// checks; nothing else is read from the Config.
struct PipelineSpec : PipelineKeys {
    TensorForm a_form, b_form;  // what A makes here, and what B checks the received x against
};
PipelineSpec pipeline_spec(const Config& config, const PairPlacement& placement);

// Where the consumer's y leaves the pipeline: the caller's result writer, behind this interface.
class RowSink {
  public:
    virtual ~RowSink() = default;
    struct Slot {
        int index;
        void* host;    // where the row is copied to
        Event* ready;  // recorded on the stream after the copy
    };
    // A free host buffer (may block: the pipeline waiting on I/O); once `slot.ready` is reached,
    // row `row` (step `step`) is in `slot.host`; drain blocks until every submitted row is out.
    virtual Slot acquire() = 0;
    virtual void submit(const Slot& slot, std::uint64_t row, std::int64_t step) = 0;
    virtual void drain() = 0;
    // Totals since the sink was made: time the pipeline waited, and the host's row checks.
    virtual double waited_ms() const = 0;
    virtual std::uint64_t checked() const = 0;
    virtual std::uint64_t mismatches() const = 0;
};

// What a pipeline allocates on a rank (the transport's slots and its own), for the resource check.
struct MemoryPlan {
    std::uint64_t slot_bytes = 0;  // one tensor
    std::uint64_t slots = 0;       // tensor slots: depth send (producer), 2 x depth recv and y
    std::uint64_t c_bytes = 0;     // C's buffer (consumer)
    // Mismatch counts, one pair per ring slot, in pinned host memory the kernels write.
    std::uint64_t counter_host_bytes = 0;
    std::uint64_t step_word_bytes = 0;    // graphs only: the step words, on each side
    std::uint64_t stamp_bytes = 0;        // launch = "device": each step's stamps and written flag
    std::uint64_t device_bytes() const {  // the host's on the CPU path
        return slots * slot_bytes + c_bytes + step_word_bytes + stamp_bytes;
    }
    std::uint64_t host_bytes() const { return counter_host_bytes + step_word_bytes; }  // pinned
};
// `producer_slots`: whether the producer's transport keeps slots of its own for A (not when A
// writes into the consumer's memory).
MemoryPlan plan_memory(const PipelineSpec& spec, Role role, bool producer_slots);

// The collective a pattern runs (for broadcast and allreduce; pairs run none).
inline Collective collective_of(Pattern pattern) {
    return pattern == Pattern::allreduce ? Collective::allreduce : Collective::broadcast;
}
// What this rank's B checks the received x against: the producer's tensor, for an all-reduce
// the exact sum of its group's shares, for a relay's stage what the stages before it made of it.
inline TensorForm received_form(const Config& config, const PairPlacement& placement) {
    if (config.pattern == Pattern::relay) {
        return placement.role == Role::producer
                   ? TensorForm{}
                   : relay_received(relay_stage(placement), config.alpha);
    }
    return config.pattern == Pattern::allreduce ? allreduce_sum(placement.group_size)
                                                : TensorForm{};
}

// A pass's steps, run in one frame (pass_frame.hpp) by the host's pass loop (launch = "host") or
// the device's persistent roles (launch = "device").
class Pipeline {
  public:
    virtual ~Pipeline() = default;
    // Runs the steps from `first_step` (0, or where a resumed run goes on); `sink` (consumers,
    // may be null) receives the rows the spec writes; `on_step` may stop the pass after a step.
    // `calibrate`: measure the ceilings where the timed steps start (outside the timings).
    virtual PassResult run(bool overlap, RowSink* sink, const StepCallback& on_step,
                           std::int64_t first_step = 0, bool calibrate = false) = 0;
    // Between passes: tensors of `elements` values from the next on, in the largest's buffers.
    virtual void resize(std::uint64_t elements) = 0;
    // The last calibrating pass's ceilings as a pass (no steps where none was measured): send and
    // recv the bare transfer, a and b a device copy on each side, c C alone.
    virtual const PassResult& ceilings() const = 0;
};

// Allocates every buffer, stream and event the run needs besides the transport's slots.
// `comm` holds every rank of the run: a pass starts, times and ends at barriers over it.
std::unique_ptr<Pipeline> make_pipeline(const PipelineSpec& spec, Device& device,
                                        Transport& transport, Role role, MPI_Comm comm);

}  // namespace gpurelay
