// The host's pass loop (launch = "host"): the steps are queued on this rank's streams (step.cpp)
// one after another (or G at a time as graphs), timed by the step timer's events and retired
// about depth + 1 steps later (the ring rule, step_timer.cpp).
#include <limits>

#include "kernels/handoff.hpp"
#include "pipeline/graph_set.hpp"
#include "pipeline/pass_frame.hpp"
#include "pipeline/step.hpp"
#include "runtime/gpu_clocks.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {
namespace {

bool in_unit(std::int64_t step, std::int64_t s, std::int64_t n) {
    return s <= step && step < s + n;
}

class HostLoop final : public PassFrame {
  public:
    HostLoop(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
             MPI_Comm comm)
        : PassFrame(spec, device, transport, role, comm),
          ring_(timing_ring_size(spec_)),
          timer_(device_, spec_, role_, ring_),
          schedule_(*this, timer_, ring_),
          graphs_(spec_, device_, ring_) {}

    PassResult run(bool overlap, RowSink* sink, const StepCallback& on_step,
                   std::int64_t first_step, bool calibrate) override;

  private:
    struct Pass : FramedPass {
        const PassPlan* plan = nullptr;
        std::int64_t retired = 0;  // the next step to retire
        bool in_graphs = false;    // whether the last steps queued were a graph
        double timed_start = 0, warm_start = 0;
    };
    Pass begin(bool overlap, RowSink* sink, std::int64_t first_step);
    void make_room(Pass& pass, std::int64_t s, bool unit);
    void decide_timing(Pass& pass);
    void queue_unit(Pass& pass, std::int64_t s, bool unit, double queued_at);
    bool stops_after(Pass& pass, const StepCallback& on_step, std::int64_t s, bool unit);
    void retire_through(Pass& pass, std::int64_t last);

    std::size_t ring_;
    StepTimer timer_;
    StepSchedule schedule_;
    GraphSet graphs_;  // last: destroyed first, before the events and buffers its graphs name
};

// One pass: the warm-up (the cold step first), where the clock starts, the timed steps, and where
// it stops. A unit is one eager step, or G steps launched as one graph.
PassResult HostLoop::run(bool overlap, RowSink* sink, const StepCallback& on_step,
                         std::int64_t first_step, bool calibrate) {
    // The whole pass on the main thread's row, so passes of a compare run are easy to tell apart.
    const NvtxRange pass_range(overlap ? "pass overlap=on" : "pass overlap=off", kPassColour);
    Pass pass = begin(overlap, sink, first_step);
    PassResult& result = pass.result;
    meet("the barrier at a pass's start");
    std::int64_t s = first_step;
    while (s < spec_.steps) {
        const bool unit = pass.plan->graph_unit_at(s);
        make_room(pass, s, unit);
        if (s == result.timed_from) {
            // The warm-up is over: the timed steps start with every rank idle and in step.
            schedule_.synchronize_all();
            decide_timing(pass);
            if (calibrate) {
                ceilings_ = schedule_.measure_ceilings();
                transport_.streams_idle();
            }
            result.clocks_start = sample_gpu_clocks(gpu_bus_id_);  // before the clock starts
            // Each rank ends its ceilings at its own time; the fill starts once all have.
            meet("the barrier where a pass's timed steps start");
            schedule_.start_fill(s);
            timer_.start_clock();
            pass.timed_start = now_ms();  // the clock starts
        }
        const std::int64_t n = pass.plan->unit_steps(s);
        if (in_unit(spec_.profile_first, s, n)) profiler_start(device_.backend());
        const double queued_at = now_ms();
        queue_unit(pass, s, unit, queued_at);
        if (in_unit(spec_.profile_last, s, n)) {
            schedule_.synchronize_all();  // the capture ends once the last profiled step has run
            profiler_stop(device_.backend());
        }
        if (s == first_step) {
            // The cold step: the first transfer between two peers sets up its connections.
            schedule_.synchronize_all();
            result.cold_step_ms = now_ms() - queued_at;
            // The graphs, captured with the connections made and before the timed steps start.
            if (spec_.graphs) graphs_.capture(schedule_, timer_, transport_, result);
            pass.warm_start = now_ms();
        }
        const bool stop = stops_after(pass, on_step, s, unit);
        s += n;
        if (stop) break;
    }
    // The clock stops once the last step has ended. The copy of its y to the host, which the io
    // stream may still be making, is the writer's (write_wait_ms, write_gbps): counted here, it
    // would make the pass that writes look slower by a whole tensor's copy.
    retire_through(pass, s - 1);
    const double steps_done = now_ms();
    result.clocks_end = sample_gpu_clocks(gpu_bus_id_);
    result.timed_wall_ms = s > result.timed_from ? steps_done - pass.timed_start : 0.0;
    schedule_.synchronize_all();
    result.timing = timer_.timing();
    result.timing_every = timer_.timing_every();
    schedule_.read_fill(result);
    // The ranks meet, the writer drains, and a consumer checks the last y on its compute stream.
    Stream* compute = schedule_.plan().compute;
    return close_pass(pass, s, compute ? schedule_.y_of(s - 1) : nullptr, compute);
}

HostLoop::Pass HostLoop::begin(bool overlap, RowSink* sink, std::int64_t first_step) {
    Pass pass;
    open_pass(pass, overlap, sink, first_step);
    PassResult& result = pass.result;
    result.retire_group_steps = retire_group_steps(spec_);
    pass.plan = &schedule_.begin_pass(overlap, sink, first_step, result.timed_from);
    timer_.begin_pass(*pass.plan);
    pass.retired = first_step;
    transport_.streams_idle();  // the last pass ended with every stream idle
    pass.timed_start = pass.warm_start = now_ms();
    return pass;
}

// Before the unit of steps from s: the steps whose ring slots it records into are retired, and
// the streams idle where eager steps and graphs meet.
void HostLoop::make_room(Pass& pass, std::int64_t s, bool unit) {
    const double retire_start = now_ms();
    retire_through(pass, timer_.last_to_retire_before(s, pass.plan->unit_steps(s)));
    if (unit != pass.in_graphs) {
        // NCCL's graph mixing is off (no eager NCCL call while a graph runs), and a graph
        // assumes the steps before it have finished.
        schedule_.synchronize_all();
        transport_.streams_idle();
    }
    if (s >= pass.result.timed_from) pass.result.host_retire_ms += now_ms() - retire_start;
}

void HostLoop::retire_through(Pass& pass, std::int64_t last) {
    for (; pass.retired <= last; ++pass.retired) {
        const RetiredSteps done = timer_.retire(pass.retired, pass.result);
        for (std::int64_t j = done.first; j <= done.last; ++j)
            schedule_.read_counts(j, pass.result);
    }
}

// Where the timed steps start, every stream idle: timing = auto decides there from the slowest
// rank's time per warm-up step (a reduction over the ranks).
void HostLoop::decide_timing(Pass& pass) {
    PassResult& result = pass.result;
    if (spec_.timing != Timing::auto_select) return;
    const std::int64_t warm_steps = result.timed_from - result.first_step - 1;
    timer_.decide_timing(warm_steps > 0
                             ? (now_ms() - pass.warm_start) / static_cast<double>(warm_steps)
                             : std::numeric_limits<double>::infinity(),
                         comm_, result);
}

// Queues the unit of steps from s (`queued_at`: when its queueing started).
void HostLoop::queue_unit(Pass& pass, std::int64_t s, bool unit, double queued_at) {
    PassResult& result = pass.result;
    const PassPlan& plan = *pass.plan;
    if (unit) {
        graphs_.launch(s, !pass.in_graphs, schedule_, timer_, pass.next_row, result);
    } else {
        timer_.begin_step(s);
        with_dtype(spec_.dtype,
                   [&]<typename T>() { schedule_.step<T>(s, static_cast<std::uint64_t>(s)); });
        schedule_.write_step(s, pass.next_row);
    }
    pass.in_graphs = unit;
    if (s >= result.timed_from) result.host_queue_ms += now_ms() - queued_at;
    if (spec_.blocking) {
        // The blocking style: the host waits for this step's send and receive.
        if (unit) graphs_.launch_stream(plan).synchronize();
        if (!unit && plan.produce) plan.produce->synchronize();
        if (!unit && plan.receive) plan.receive->synchronize();
    }
}

// Whether the ranks' answers after the unit's steps (alike on every rank) end the pass after it
// (every step of a graph has run when it stops); a stop inside a retire group ends the group.
bool HostLoop::stops_after(Pass& pass, const StepCallback& on_step, std::int64_t s, bool unit) {
    const std::int64_t n = pass.plan->unit_steps(s);
    AfterStep after = AfterStep::go;
    const double callback_start = now_ms();
    for (std::int64_t j = s; j < s + n && after == AfterStep::go; ++j) {
        if (on_step) after = on_step(j);
    }
    if (s >= pass.result.timed_from) pass.result.host_callback_ms += now_ms() - callback_start;
    if (after == AfterStep::go) return false;
    const std::int64_t last = s + n - 1;
    timer_.stop_after(last, unit ? graphs_.launch_stream(*pass.plan) : *pass.plan->last);
    if (after == AfterStep::end) schedule_.write_step(last, pass.next_row, /*last=*/true);
    return true;
}

}  // namespace

PipelineSpec pipeline_spec(const Config& config, const PairPlacement& placement) {
    // A makes one tensor, or for an all-reduce this rank's share (its group rank folded in).
    const TensorForm made =
        config.pattern == Pattern::allreduce ? allreduce_share(placement.group_rank) : TensorForm{};
    return {config, made, received_form(config, placement)};
}

MemoryPlan plan_memory(const PipelineSpec& spec, Role role, bool producer_slots) {
    const bool producer = role != Role::consumer;
    const bool consumer = role != Role::producer;
    const auto depth = static_cast<std::uint64_t>(spec.depth);
    MemoryPlan plan;
    plan.slot_bytes = spec.tensor_bytes();
    // A relay's middle stage keeps no y slots of its own: B writes its outgoing slots.
    const std::uint64_t consumer_slots = role == Role::relay ? depth : 2 * depth;
    plan.slots = (producer && producer_slots ? depth : 0) + (consumer ? consumer_slots : 0);
    if (consumer) {
        plan.c_bytes = spec.c_elements * sizeof(std::uint32_t);
        plan.counter_host_bytes = timing_ring_size(spec) * 2 * sizeof(Counter);
    }
    if (spec.graphs) plan.step_word_bytes = 2 * sizeof(std::uint64_t);
    if (spec.launch == Launch::device) {
        const auto steps = static_cast<std::uint64_t>(spec.steps);
        plan.stamp_bytes = steps * ((producer ? sizeof(ProducerStamps) : 0) +
                                    (consumer ? sizeof(ConsumerStamps) + 1 : 0));
        // C's ring of counters replaces the step timer's.
        if (consumer) plan.counter_host_bytes = kDeviceCWindow * sizeof(Counter);
    }
    return plan;
}

std::unique_ptr<Pipeline> make_host_loop(const PipelineSpec& spec, Device& device,
                                         Transport& transport, Role role, MPI_Comm comm) {
    return std::make_unique<HostLoop>(spec, device, transport, role, comm);
}

}  // namespace gpurelay
