// The schedule of one step (step.cpp), and what it owns: the streams, the consumer's counts and
// C's buffer (the tensor slots are the transport's, the y slots the frame's).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/pass_frame.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/step_timer.hpp"

namespace gpurelay {

class StepSchedule {
  public:
    StepSchedule(const PassFrame& frame, StepTimer& timer, std::size_t ring);

    // The plan the schedule follows until the next pass.
    PassPlan& begin_pass(bool overlap, RowSink* sink, std::int64_t first_step,
                         std::int64_t timed_from);
    const PassPlan& plan() const { return plan_; }
    // While graphs are captured: the waits a graph's launch makes for it are left out.
    void set_capturing(bool capturing) { plan_.capturing = capturing; }

    // Queues step s: the producer's part, then the consumer's, as this rank plays them. `step` is
    // the step as the kernels read it (s itself, or a graph's cycle word and offset).
    template <typename T>
    void step(std::int64_t s, StepArg step);
    // Queues the copy of step s's y to the sink, when this rank writes it (always eager: which
    // steps are written varies, and the sink's buffers come from it); `last`: s ends the pass
    // early, and is written where write = "last" writes.
    void write_step(std::int64_t s, std::uint64_t& next_row, bool last = false);
    // Before B of step s overwrites y slot s mod depth: the io stream's copy of it is done.
    void wait_y_free(std::int64_t s, Stream& stream);

    // Step s's mismatch counts, once its work is done, into `result` (zeroed for the ring slot's
    // next step).
    void read_counts(std::int64_t s, PassResult& result);
    // Where step s's y lies: the frame's y slot, or a middle stage's outgoing slot.
    void* y_of(std::int64_t s) const { return forwards_ ? forwarded_[slot_of(s)] : frame_.y(s); }
    // The phases' ceilings, each measured alone (ceilings.cpp), every stream idle before and
    // after; the ranks meet at each.
    PassResult measure_ceilings();
    // Where the timed steps start (every stream idle, past a barrier): a consumer that keeps y
    // times from here to B of step s, read by read_fill once the pass is over.
    void start_fill(std::int64_t s);
    void read_fill(PassResult& result);
    void synchronize_all();  // until every stream of this rank is idle

  private:
    template <typename T>
    void producer_step(std::int64_t s, StepArg step);
    template <typename T>
    void consumer_step(std::int64_t s, StepArg step);
    const void* receive(std::int64_t s, std::size_t k, Stream& stream);
    Stream* receive_stream(ReceivePlacement at) const;  // null on a rank that consumes nothing
    // A relay's middle stage: the send of what B wrote, on the producer stream once B is done.
    void forward(std::int64_t s);
    std::size_t slot_of(std::int64_t s) const { return static_cast<std::size_t>(s) % depth_; }
    Counter* counts_of(std::int64_t s);
    void measure_transfer(std::int64_t s, StepTimes& times);
    template <typename Work>
    double timed(Stream& stream, Work&& work);

    const PassFrame& frame_;
    const PipelineSpec& spec_;
    Device& device_;
    Transport& transport_;
    StepTimer& timer_;
    bool producer_, consumer_;
    bool forwards_;  // a relay's middle stage: B writes the outgoing slot, which is sent on
    std::size_t depth_, ring_;
    PassPlan plan_;
    Buffer c_, counts_;
    // Per tensor slot: the receive is in (comm to compute stream), the io stream has copied y out.
    std::vector<std::unique_ptr<Event>> arrived_, y_free_;
    std::vector<bool> y_pending_;
    // A middle stage, per tensor slot: where B last wrote (the outgoing slot) and B's end.
    std::vector<void*> forwarded_;
    std::vector<std::unique_ptr<Event>> b_done_;
    std::array<std::unique_ptr<Event>, 4> ceiling_events_;  // two start/end pairs
    std::unique_ptr<Event> fill_start_, fill_end_;
    std::int64_t fill_step_ = -1;  // the step whose B ends the fill (-1: none)
    bool fill_recorded_ = false;
    // After the buffers: destroyed first, so no stream's queued work outlives what it uses.
    std::unique_ptr<Stream> producer_stream_, comm_, compute_, io_;
};

}  // namespace gpurelay
