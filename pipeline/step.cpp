// One step, as the hardware runs it (drawn in docs/STRUCTURE.md, "One step"): the producer's A
// and send on its stream; on the consumer the receive where the pass's ReceivePlacement (plan.hpp)
// puts it, then C, the wait for arrived[k] and B on the compute stream, and y out on the io
// stream. Slot k = s mod depth; the transport keeps its reuse rule. Every call only queues work:
// the host waits nowhere in a step.
#include "pipeline/step.hpp"

#include <cstring>

namespace gpurelay {

template <typename T>
void StepSchedule::producer_step(std::int64_t s, StepArg step) {
    const std::size_t k = slot_of(s);
    Stream& out = *plan_.produce;
    void* x = transport_.acquire(k, out);
    {
        PhaseScope a(timer_, Phase::a, s, out);
        launch_a(Span<T>{static_cast<T*>(x), spec_.elements}, step, spec_.seed, out, spec_.a_form);
    }
    {
        PhaseScope send(timer_, Phase::send, s, out);
        transport_.publish(k, out);
    }
    if (!consumer_) timer_.end_step(s, out);
}

template <typename T>
void StepSchedule::consumer_step(std::int64_t s, StepArg step) {
    const std::size_t k = slot_of(s);
    Stream& compute = *compute_;
    Counter* counts = counts_of(s);
    const auto iterations = static_cast<std::uint32_t>(spec_.c_iterations);
    const ReceivePlacement receive_at = plan_.receive_at;
    const void* x = nullptr;
    if (receive_at == ReceivePlacement::comm_stream) {
        x = receive(s, k, *comm_);
        arrived_[k]->record(*comm_);
    }
    if (receive_at == ReceivePlacement::before_c) x = receive(s, k, compute);
    {
        PhaseScope c(timer_, Phase::c, s, compute, spec_.c_elements > 0);
        if (spec_.c_elements > 0)
            launch_c(c_.as<std::uint32_t>(), step, spec_.seed, iterations, compute);
    }
    {
        // The GPU waits for the tensor, not the host; and for y's copy out before B overwrites it.
        PhaseScope wait(timer_, Phase::wait, s, compute);
        if (receive_at == ReceivePlacement::comm_stream) compute.wait(*arrived_[k]);
        if (receive_at == ReceivePlacement::in_wait) x = receive(s, k, compute);
        wait_y_free(s, compute);
        // A middle stage's B writes straight into its outgoing slot, once that is free.
        if (forwards_) forwarded_[k] = transport_.acquire(k, compute);
    }
    {
        PhaseScope b(timer_, Phase::b, s, compute);
        launch_b(Span<const T>{static_cast<const T*>(x), spec_.elements},
                 Span<T>{static_cast<T*>(y_of(s)), spec_.elements}, static_cast<T>(spec_.alpha),
                 step, spec_.seed, counts, compute, spec_.b_form);
    }
    transport_.release(k, compute);  // B was x's last reader
    if (forwards_) b_done_[k]->record(compute);
    if (s == fill_step_ && !plan_.capturing) {
        fill_end_->record(compute);
        fill_recorded_ = true;
    }
    if (spec_.c_elements > 0) {
        PhaseScope verify(timer_, Phase::verify, s, compute);
        launch_verify_c(Span<const std::uint32_t>(c_.as<std::uint32_t>()), step, spec_.seed,
                        iterations, counts + 1, compute);
    }
    timer_.end_step(s, compute);
    if (forwards_) forward(s);
}

// On the producer stream, so that the compute stream goes on to the next step's C and B while
// the send runs.
void StepSchedule::forward(std::int64_t s) {
    const std::size_t k = slot_of(s);
    Stream& out = *plan_.produce;
    out.wait(*b_done_[k]);
    PhaseScope send(timer_, Phase::send, s, out);
    transport_.publish(k, out);
}

const void* StepSchedule::receive(std::int64_t s, std::size_t k, Stream& stream) {
    PhaseScope recv(timer_, Phase::recv, s, stream);
    return transport_.await(k, stream);
}

template <typename T>
void StepSchedule::step(std::int64_t s, StepArg step) {
    if (producer_ && !forwards_) producer_step<T>(s, step);
    if (consumer_) consumer_step<T>(s, step);
}

void StepSchedule::write_step(std::int64_t s, std::uint64_t& next_row, bool last) {
    const bool writes_last = last && spec_.write == WriteMode::last && plan_.sink != nullptr;
    if (!plan_.writes(s) && !writes_last) return;
    const std::size_t k = slot_of(s);
    const RowSink::Slot row = plan_.sink->acquire();
    io_->wait(timer_.end_event(s));  // B has written y
    {
        PhaseScope write(timer_, Phase::write, s, *io_);
        device_.copy_async(row.host, y_of(s), spec_.tensor_bytes(), *io_);
    }
    row.ready->record(*io_);
    y_free_[k]->record(*io_);
    y_pending_[k] = true;
    plan_.sink->submit(row, next_row++, s);
}

// While capturing, the graph's launch makes these waits (graph_set.cpp).
void StepSchedule::wait_y_free(std::int64_t s, Stream& stream) {
    const std::size_t k = slot_of(s);
    if (plan_.capturing || !y_pending_[k]) return;
    stream.wait(*y_free_[k]);
    y_pending_[k] = false;
}

// --- Set-up -------------------------------------------------------------------------------------

StepSchedule::StepSchedule(const PassFrame& frame, StepTimer& timer, std::size_t ring)
    : frame_(frame),
      spec_(frame.spec()),
      device_(frame.device()),
      transport_(frame.transport()),
      timer_(timer),
      producer_(frame.role() != Role::consumer),
      consumer_(frame.role() != Role::producer),
      forwards_(frame.role() == Role::relay),
      depth_(static_cast<std::size_t>(spec_.depth)),
      ring_(ring) {
    for (auto& event : ceiling_events_) event = device_.make_event(EventUse::timing);
    fill_start_ = device_.make_event(EventUse::timing);
    fill_end_ = device_.make_event(EventUse::timing);
    if (producer_) producer_stream_ = device_.make_stream(false, frame.label("producer stream"));
    if (!consumer_) return;
    // The comm stream gets the higher priority: the compute stream's B waits on it, and C must
    // not delay the transfer it is meant to hide.
    comm_ = device_.make_stream(true, frame.label("comm stream"));
    compute_ = device_.make_stream(false, frame.label("compute stream"));
    io_ = device_.make_stream(false, frame.label("io stream"));
    for (std::size_t k = 0; k < depth_; ++k) {
        if (forwards_) {
            forwarded_.push_back(nullptr);
            b_done_.push_back(device_.make_event(EventUse::ordering));
        }
        arrived_.push_back(device_.make_event(EventUse::ordering));
        y_free_.push_back(device_.make_event(EventUse::ordering));
    }
    y_pending_.assign(depth_, false);
    c_ = device_.allocate(spec_.c_elements * sizeof(std::uint32_t));
    // B and C's check add their mismatches here, in the step's ring slot: host memory the kernels
    // write directly (pinned, so mapped on a GPU), read and zeroed by the host when it retires
    // the step, so a step needs no memset and no copy.
    counts_ = device_.allocate_host(ring * 2 * sizeof(Counter));
    std::memset(counts_.data(), 0, counts_.bytes());
}

PassPlan& StepSchedule::begin_pass(bool overlap, RowSink* sink, std::int64_t first_step,
                                   std::int64_t timed_from) {
    plan_ = PassPlan{};
    plan_.spec = &spec_;
    plan_.overlap = overlap;
    plan_.first_step = first_step;
    plan_.timed_from = timed_from;
    plan_.sink = consumer_ ? sink : nullptr;
    plan_.produce = producer_stream_.get();
    plan_.compute = compute_.get();
    plan_.last = consumer_ ? compute_.get() : producer_stream_.get();
    if (producer_) plan_.graph_streams.push_back(producer_stream_.get());
    if (consumer_) {
        const bool waits = transport_.receive_waits();
        plan_.receive_at = receive_placement(waits, overlap);
        plan_.receive = receive_stream(plan_.receive_at);
        plan_.times_receive = !waits;
        if (plan_.receive != compute_.get()) plan_.graph_streams.push_back(plan_.receive);
        plan_.graph_streams.push_back(compute_.get());
    }
    return plan_;
}

Stream* StepSchedule::receive_stream(ReceivePlacement at) const {
    return at == ReceivePlacement::comm_stream ? comm_.get() : compute_.get();
}

Counter* StepSchedule::counts_of(std::int64_t s) {
    return counts_.as<Counter>().data() + 2 * (static_cast<std::size_t>(s) % ring_);
}

void StepSchedule::read_counts(std::int64_t s, PassResult& result) {
    if (!consumer_) return;
    Counter* counts = counts_of(s);
    result.retire_counts(s, counts[0], counts[1]);
    counts[0] = counts[1] = 0;
}

void StepSchedule::start_fill(std::int64_t s) {
    fill_step_ = consumer_ && !forwards_ ? s : -1;
    fill_recorded_ = false;
    if (fill_step_ >= 0) fill_start_->record(*compute_);
}

void StepSchedule::read_fill(PassResult& result) {
    if (fill_recorded_) result.fill_ms = fill_end_->elapsed_ms_since(*fill_start_);
    fill_step_ = -1;
    fill_recorded_ = false;
}

void StepSchedule::synchronize_all() {
    for (Stream* stream : {producer_stream_.get(), comm_.get(), compute_.get(), io_.get()}) {
        if (stream != nullptr) stream->synchronize();
    }
}

template void StepSchedule::step<float>(std::int64_t, StepArg);
template void StepSchedule::step<double>(std::int64_t, StepArg);

}  // namespace gpurelay
