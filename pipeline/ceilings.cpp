// The ceilings, each measured alone on the rank's streams before the timed steps: the bare transfer
// (no A, B or C), a device copy of the tensor on each side (A's and B's), C alone, filling a
// PassResult as the phases they stand for, so the report reduces them as it reduces a pass.
#include "pipeline/step.hpp"

namespace gpurelay {

PassResult StepSchedule::measure_ceilings() {
    // Measurements of each kind, after those left out as warm-up.
    constexpr std::int64_t kCeilingWarmup = 2, kCeilingSamples = 10;
    const std::int64_t total = kCeilingWarmup + kCeilingSamples;
    const double started = now_ms();
    PassResult result;
    result.timed_from = kCeilingWarmup;
    result.end_step = total;
    std::vector<StepTimes> times(static_cast<std::size_t>(total));
    for (std::int64_t s = 0; s < total; ++s)
        measure_transfer(s, times[static_cast<std::size_t>(s)]);
    Buffer from = device_.allocate(spec_.tensor_bytes()),
           to = device_.allocate(spec_.tensor_bytes());
    for (std::int64_t s = 0; s < total; ++s) {
        StepTimes& t = times[static_cast<std::size_t>(s)];
        Stream& stream = producer_ ? *producer_stream_ : *compute_;
        const double copy = timed(stream, [&] {
            device_.copy_async(to.data(), from.data(), spec_.tensor_bytes(), stream);
        });
        if (producer_) t.a = copy;
        if (consumer_) t.b = copy;
        if (consumer_ && spec_.c_elements > 0) {
            t.c = timed(*compute_, [&] {
                launch_c(c_.as<std::uint32_t>(), static_cast<std::uint64_t>(s), spec_.seed,
                         static_cast<std::uint32_t>(spec_.c_iterations), *compute_);
            });
        }
        // A barrier after each run, not one after all of them: a rank then waits for one of its
        // peer's C runs at a time, as in a step, so timeout_s bounds each wait without ending a
        // loaded run that is only slow (12 runs of C outlasted 3 s under load), and a peer that
        // stops here is noticed after timeout_s, not 12 times it.
        frame_.meet("the barrier after a ceiling's copy and C");
        result.retire_step(s, t);
    }
    result.timed_wall_ms = now_ms() - started;
    return result;
}

// One bare transfer through slot s mod depth, both sides started together; a receive that only
// waits for the producer's side is not a transfer of its own and is not timed.
void StepSchedule::measure_transfer(std::int64_t s, StepTimes& t) {
    const std::size_t k = slot_of(s);
    // The receive on the stream an overlapped step gives it.
    const bool waits = transport_.receive_waits();
    Stream* receive = receive_stream(receive_placement(waits, true));
    frame_.meet("the barrier before a ceiling's transfer");
    // Both sides are queued before either is waited on: a rank sending to itself over MPI would
    // otherwise wait for a receive it has not posted.
    if (producer_) {
        ceiling_events_[0]->record(*producer_stream_);
        transport_.acquire(k, *producer_stream_);
        transport_.publish(k, *producer_stream_);
        ceiling_events_[1]->record(*producer_stream_);
    }
    if (consumer_) {
        ceiling_events_[2]->record(*receive);
        transport_.await(k, *receive);
        ceiling_events_[3]->record(*receive);
        transport_.release(k, *receive);
    }
    if (producer_) {
        ceiling_events_[1]->synchronize();
        t.send = ceiling_events_[1]->elapsed_ms_since(*ceiling_events_[0]);
    }
    if (consumer_) {
        ceiling_events_[3]->synchronize();
        if (!waits) t.recv = ceiling_events_[3]->elapsed_ms_since(*ceiling_events_[2]);
    }
    synchronize_all();
}

template <typename Work>
double StepSchedule::timed(Stream& stream, Work&& work) {
    ceiling_events_[0]->record(stream);
    work();
    ceiling_events_[1]->record(stream);
    ceiling_events_[1]->synchronize();
    return ceiling_events_[1]->elapsed_ms_since(*ceiling_events_[0]);
}

}  // namespace gpurelay
