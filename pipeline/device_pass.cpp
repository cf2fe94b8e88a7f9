// The device's roles (launch = "device"): a pass the device drives itself. One persistent role per
// side runs every step (kernels/handoff.hpp); the host only launches them, feeds C beside them,
// copies y out, votes on a stop and waits, bounded, for them to end; each step's times, and the
// clock's start and stop, come from the roles' own stamps.
//
//   producer role    wait released[k] ─ A into slot k ─ arrived[k] ───────────────┐
//   consumer role                              wait arrived[k], c_done ─ B ─ released[k], gate
//   compute stream   wait gate ─ C ─ c_done ─ check C                              │
//   io stream        (written steps, once done) y out ─ y_copied                   │
//   host             launch ─ feed C, copy y, vote on a stop ─ wait for the end ◄──┘
#include <algorithm>
#include <cstring>
#include <utility>

#include "config/transport_choice.hpp"
#include "kernels/handoff.hpp"
#include "pipeline/pass_frame.hpp"
#include "pipeline/step_timer.hpp"
#include "runtime/error.hpp"
#include "runtime/gpu_clocks.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/poll.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {

static_assert(kMaxDepth <= kMaxSlots, "a role's ring holds every slot depth allows");

namespace {

// The words of a pass that the host, the streams and the roles share (device memory on a GPU),
// each on its own line; zeroed before each pass.
struct PassWords {
    alignas(64) std::uint32_t stop;      // the host to the producer: stop (read once a step)
    alignas(64) std::uint32_t gate;      // the consumer to C: C of step s may start at s + 1
    alignas(64) std::uint32_t c_done;    // C to the consumer: C of step s done at s + 1
    alignas(64) std::uint32_t y_copied;  // the host's io stream to the consumer: y of s out, s + 1
    alignas(64) unsigned char producer_workspace[kHandOffWorkspaceBytes];
    alignas(64) unsigned char consumer_workspace[kHandOffWorkspaceBytes];
};

double ms_between(std::uint64_t from, std::uint64_t to) {
    return static_cast<double>(static_cast<std::int64_t>(to - from)) / 1e6;
}

class DeviceRoles final : public PassFrame {
  public:
    // Allocates for the spec's (largest) size; a usage error if both roles' blocks cannot fit.
    DeviceRoles(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
                MPI_Comm comm);

    // `on_step` is asked once this rank's last role has done a step, so a stop reaches the roles
    // a few steps later. No ceilings: they are the host-launched phases'.
    PassResult run(bool overlap, RowSink* sink, const StepCallback& on_step,
                   std::int64_t first_step, bool) override;

  private:
    struct Pass : FramedPass {
        std::int64_t end = 0;  // one past the last step, once the roles have ended
        std::int64_t c_queued = 0, c_retired = 0, copied = 0;  // the next step for each
        std::vector<std::uint8_t> written;                     // per step from the first
        std::vector<double> c_ms;                              // C's time, per step from the first
        std::vector<Counter> c_mismatches;                     // C's wrong elements, likewise
        std::uint32_t blocks = 1;
    };
    // The roles' status as the host last read it.
    struct Progress {
        std::int64_t done = 0;  // this rank's last role's steps done
        bool ended = false;     // every role of this rank has ended
        std::int64_t end_step = 0;
    };
    Pass begin(bool overlap, RowSink* sink, std::int64_t first_step);
    RoleArgs role_args(const Pass& pass, bool consumer) const;
    template <typename T>
    void launch_roles(Pass& pass);
    void watch(Pass& pass, const StepCallback& on_step);
    Progress look(const Pass& pass) const;
    void feed_c(Pass& pass, std::int64_t done);
    void queue_c(std::int64_t s);
    void copy_rows(Pass& pass, std::int64_t done);
    void end_streams();
    void read_stamps(Pass& pass);
    PassWords* words() const { return static_cast<PassWords*>(words_.data()); }
    RoleStatus* status(bool consumer) const {
        return static_cast<RoleStatus*>(status_.data()) + (consumer ? 1 : 0);
    }

    Buffer c_, words_, status_, producer_stamps_, consumer_stamps_, written_, c_counts_;
    std::vector<std::unique_ptr<Event>> c_start_, c_end_, c_checked_;  // C's ring of steps
    // After the buffers: destroyed first, so no stream's queued work outlives what it uses.
    std::unique_ptr<Stream> producer_role_, consumer_role_, compute_, io_;
};

// One pass: the words reset and the ranks met, the roles launched (every step is stamped on the
// device's clock from there), watched until they end, their stamps read back.
PassResult DeviceRoles::run(bool overlap, RowSink* sink, const StepCallback& on_step,
                            std::int64_t first_step, bool) {
    const NvtxRange pass_range(overlap ? "pass overlap=on" : "pass overlap=off", kPassColour);
    Pass pass = begin(overlap, sink, first_step);
    meet("the barrier at a pass's start");
    pass.result.clocks_start = sample_gpu_clocks(gpu_bus_id_);
    // The profiler's range, if any, holds the whole pass: its steps are one launch.
    const bool profiled = spec_.profile_first >= 0;
    if (profiled) profiler_start(device_.backend());
    with_dtype(spec_.dtype, [&]<typename T>() { launch_roles<T>(pass); });
    watch(pass, on_step);
    end_streams();
    if (profiled) profiler_stop(device_.backend());
    pass.result.clocks_end = sample_gpu_clocks(gpu_bus_id_);
    read_stamps(pass);
    return close_pass(pass, pass.end, consumer_ ? y(pass.end - 1) : nullptr, io_.get());
}

DeviceRoles::Pass DeviceRoles::begin(bool overlap, RowSink* sink, std::int64_t first_step) {
    Pass pass;
    open_pass(pass, overlap, sink, first_step);
    pass.result.timing = Timing::phases;
    pass.c_queued = pass.c_retired = pass.copied = first_step;
    for (std::int64_t s = first_step; s < spec_.steps; ++s) {
        pass.written.push_back(pass.sink != nullptr && spec_.writes_step(s) ? 1 : 0);
    }
    // Without C its phase is empty, as a host-launched step times it.
    pass.c_ms.assign(pass.written.size(), spec_.c_elements == 0 ? 0.0 : StepTimes::kNone);
    pass.c_mismatches.assign(pass.written.size(), 0);
    pass.blocks = handoff_blocks(device_.backend(), spec_.elements, dtype_size(spec_.dtype),
                                 spec_.device_blocks);
    // The words from zero, then where C and the holds start: C of the first step may start at
    // once with overlap, else once its tensor has arrived.
    std::memset(status_.data(), 0, status_.bytes());
    device_.fill_async(words_.data(), 0, sizeof(PassWords), *io_);
    const auto first = static_cast<std::uint32_t>(first_step);
    device_.write_word(&words()->gate, overlap ? first + 1 : first, *io_);
    device_.write_word(&words()->c_done, first, *io_);
    device_.write_word(&words()->y_copied, first, *io_);
    if (consumer_) {
        device_.fill_async(consumer_stamps_.data(), 0, consumer_stamps_.bytes(), *io_);
        device_.copy_async(written_.data(), pass.written.data(), pass.written.size(), *io_);
    }
    io_->synchronize();
    return pass;
}

RoleArgs DeviceRoles::role_args(const Pass& pass, bool consumer) const {
    SlotFlags* home = transport_.slot_flags(consumer ? Role::consumer : Role::producer);
    return {.flags = *home,
            .home = home,
            .first = pass.result.first_step,
            .steps = spec_.steps,
            .elements = spec_.elements,
            .seed = spec_.seed,
            .blocks = pass.blocks,
            .timeout_ns = static_cast<std::uint64_t>(spec_.timeout().count()) * 1000000u,
            .status = status(consumer),
            .workspace = consumer ? words()->consumer_workspace : words()->producer_workspace};
}

template <typename T>
void DeviceRoles::launch_roles(Pass& pass) {
    if (consumer_) {
        ConsumerArgs<T> c;
        c.role = role_args(pass, true);
        c.alpha = static_cast<T>(spec_.alpha);
        c.expected = spec_.b_form;
        for (std::int64_t k = 0; k < spec_.depth; ++k) c.y[k] = static_cast<T*>(y(k));
        c.overlap = pass.result.overlap;
        c.has_c = spec_.c_elements > 0;
        c.c_done = &words()->c_done;
        c.gate = &words()->gate;
        c.y_copied = &words()->y_copied;
        c.written = static_cast<const std::uint8_t*>(written_.data());
        c.stamps = static_cast<ConsumerStamps*>(consumer_stamps_.data());
        launch_role(c, *consumer_role_);
    }
    if (producer_) {
        ProducerArgs<T> p;
        p.role = role_args(pass, false);
        p.form = spec_.a_form;
        p.stop = &words()->stop;
        p.stamps = static_cast<ProducerStamps*>(producer_stamps_.data());
        launch_role(p, *producer_role_);
    }
}

// The host's part while the roles run: C fed, written steps' y copied out, the stop vote asked
// after each step done (an agreed stop reaches the producer through the stop word). Bounded: each
// role's own waits run out after timeout_s and say which; this gives up after twice that.
void DeviceRoles::watch(Pass& pass, const StepCallback& on_step) {
    std::int64_t voted = pass.result.first_step;  // the next step to vote on
    bool stopping = false;
    const auto bound = 2 * spec_.timeout() + std::chrono::seconds(1);
    for (;;) {
        const Progress now = look(pass);
        if (consumer_) {
            feed_c(pass, now.done);
            copy_rows(pass, now.done);
        }
        const double callback_start = now_ms();
        for (; voted < now.done && !stopping; ++voted) {
            if (!on_step || on_step(voted) == AfterStep::go) continue;
            device_.write_word(&words()->stop, 1u, *io_);
            stopping = true;
        }
        pass.result.host_callback_ms += now_ms() - callback_start;
        if (now.ended && (stopping || voted >= now.end_step)) {
            pass.end = now.end_step;
            return;
        }
        // Until the roles have done another step, or ended: no spin (the roles' steps take
        // longer than a spin would save).
        const auto moved = [&] {
            const Progress next = look(pass);
            return next.done != now.done || next.ended != now.ended;
        };
        if (!poll_until(moved, std::chrono::steady_clock::now() + bound,
                        {std::chrono::microseconds(0), std::chrono::microseconds(1000)})) {
            throw timeout_error("launch = \"device\": a step of the roles", bound);
        }
    }
}

// The roles' status now; a wait that ran out in either ends the rank, naming the wait and step.
DeviceRoles::Progress DeviceRoles::look(const Pass& pass) const {
    Progress p{.done = spec_.steps, .ended = true};
    for (const bool consumer : {false, true}) {
        if (!(consumer ? consumer_ : producer_)) continue;
        const RoleStatus& st = *status(consumer);
        const auto failed = static_cast<HandOffWait>(load_acquire(&st.failed_wait));
        if (failed != HandOffWait::none) {
            throw timeout_error(std::string("launch = \"device\": the ") +
                                    (consumer ? "consumer" : "producer") + " at step " +
                                    std::to_string(load_acquire(&st.failed_step)) + ", " +
                                    handoff_wait_text(failed) + ",",
                                spec_.timeout());
        }
        const bool ended = load_acquire(&st.ended) != 0;
        p.done = std::min(p.done, std::max(load_acquire(&st.done), pass.result.first_step));
        p.ended = p.ended && ended;
        if (ended) p.end_step = load_acquire(&st.end_step);
    }
    return p;
}

// C of the steps whose B is done retired (its time, and its check once that has run), and C
// queued up to kDeviceCWindow steps ahead of them, each behind its gate.
void DeviceRoles::feed_c(Pass& pass, std::int64_t done) {
    if (spec_.c_elements == 0) return;
    for (; pass.c_retired < done; ++pass.c_retired) {
        const auto r = static_cast<std::size_t>(pass.c_retired % kDeviceCWindow);
        c_checked_[r]->synchronize();
        const auto i = static_cast<std::size_t>(pass.c_retired - pass.result.first_step);
        pass.c_ms[i] = c_end_[r]->elapsed_ms_since(*c_start_[r]);
        pass.c_mismatches[i] = std::exchange(c_counts_.as<Counter>()[r], 0);
    }
    for (; pass.c_queued < spec_.steps && pass.c_queued < pass.c_retired + kDeviceCWindow;
         ++pass.c_queued) {
        queue_c(pass.c_queued);
    }
}

void DeviceRoles::queue_c(std::int64_t s) {
    const auto r = static_cast<std::size_t>(s % kDeviceCWindow);
    const auto iterations = static_cast<std::uint32_t>(spec_.c_iterations);
    const Span<std::uint32_t> z = c_.as<std::uint32_t>();
    device_.wait_word(&words()->gate, static_cast<std::uint32_t>(s + 1), *compute_,
                      "launch = \"device\": C waiting for the consumer to let its step start");
    c_start_[r]->record(*compute_);
    launch_c(z, static_cast<std::uint64_t>(s), spec_.seed, iterations, *compute_);
    c_end_[r]->record(*compute_);
    device_.write_word(&words()->c_done, static_cast<std::uint32_t>(s + 1), *compute_);
    launch_verify_c(Span<const std::uint32_t>(z), static_cast<std::uint64_t>(s), spec_.seed,
                    iterations, c_counts_.as<Counter>().data() + r, *compute_);
    c_checked_[r]->record(*compute_);
}

// The written steps the consumer has done, copied out; y_copied lets it write the slot again.
void DeviceRoles::copy_rows(Pass& pass, std::int64_t done) {
    if (pass.sink == nullptr) return;
    const std::int64_t first = pass.result.first_step;
    for (; pass.copied < done; ++pass.copied) {
        const std::int64_t s = pass.copied;
        if (pass.written[static_cast<std::size_t>(s - first)] == 0) continue;
        const RowSink::Slot row = pass.sink->acquire();
        device_.copy_async(row.host, y(s), spec_.tensor_bytes(), *io_);
        row.ready->record(*io_);
        device_.write_word(&words()->y_copied, static_cast<std::uint32_t>(s + 1), *io_);
        pass.sink->submit(row, pass.next_row++, s);
    }
}

// Each step's phases from the roles' stamps: A and the publish (producer), the wait for the
// tensor and C, and B (consumer); a step's end is the consumer's release (the producer's publish
// on a rank that only produces), its period the time since the step before's end. The clock
// starts at the warm-up's last step's end (or the roles' start) and stops at the pass's last.
void DeviceRoles::read_stamps(Pass& pass) {
    PassResult& r = pass.result;
    const std::int64_t first = r.first_step;
    const auto n = static_cast<std::size_t>(pass.end - first);
    std::vector<ProducerStamps> produced(producer_ ? n : 0);
    std::vector<ConsumerStamps> consumed(consumer_ ? n : 0);
    const auto fetch = [&](auto& to, const Buffer& from) {
        if (!to.empty()) device_.copy_async(to.data(), from.data(), n * sizeof(to[0]), *io_);
    };
    fetch(produced, producer_stamps_);
    fetch(consumed, consumer_stamps_);
    io_->synchronize();
    std::uint64_t previous = load_acquire(&status(consumer_)->started_ns);
    std::uint64_t clock_start = previous;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t s = first + static_cast<std::int64_t>(i);
        StepTimes t;
        Counter x_mismatches = 0;
        if (producer_) {
            t.a = ms_between(produced[i].a_start, produced[i].a_end);
            t.send = ms_between(produced[i].a_end, produced[i].published);
        }
        if (consumer_) {
            t.c = pass.c_ms[i];
            t.wait = ms_between(consumed[i].start, consumed[i].ready);
            t.b = ms_between(consumed[i].ready, consumed[i].b_end);
            x_mismatches = consumed[i].x_mismatches;
        }
        const std::uint64_t end_ns = consumer_ ? consumed[i].released : produced[i].published;
        if (s == first) r.cold_step_ms = ms_between(previous, end_ns);
        if (s > first) t.period = ms_between(previous, end_ns);
        if (s == r.timed_from) clock_start = s > first ? previous : clock_start;
        previous = end_ns;
        r.retire_step(s, t);
        r.retire_counts(s, x_mismatches, consumer_ ? pass.c_mismatches[i] : 0);
    }
    r.timed_wall_ms = pass.end > r.timed_from ? ms_between(clock_start, previous) : 0.0;
    r.phase_timed_steps = std::max<std::int64_t>(0, pass.end - r.timed_from);
}

// Once the roles have ended: C queued past the pass's end let through (its counts dropped), and
// every stream idle, so the stamps and the slots are the host's.
void DeviceRoles::end_streams() {
    if (consumer_) {
        device_.write_word(&words()->gate, static_cast<std::uint32_t>(spec_.steps + 1), *io_);
    }
    for (Stream* stream : {producer_role_.get(), consumer_role_.get(), compute_.get(), io_.get()}) {
        if (stream != nullptr) stream->synchronize();
    }
    if (consumer_) std::memset(c_counts_.data(), 0, c_counts_.bytes());
}

// --- Set-up -------------------------------------------------------------------------------------

DeviceRoles::DeviceRoles(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
                         MPI_Comm comm)
    : PassFrame(spec, device, transport, role, comm) {
    if ((producer_ && transport.slot_flags(Role::producer) == nullptr) ||
        (consumer_ && transport.slot_flags(Role::consumer) == nullptr)) {
        throw usage_error("launch = \"device\" needs a pair over " + device_launch_request());
    }
    const std::uint32_t blocks = handoff_blocks(device_.backend(), spec_.elements,
                                                dtype_size(spec_.dtype), spec_.device_blocks);
    check_handoff_fits(device_.backend(), blocks, blocks);
    const auto steps = static_cast<std::size_t>(spec_.steps);
    words_ = device_.allocate(sizeof(PassWords));
    status_ = device_.allocate_host(2 * sizeof(RoleStatus));
    io_ = device_.make_stream(false, label("io stream"));
    if (producer_) {
        producer_role_ = device_.make_stream(true, label("producer role"));
        producer_stamps_ = device_.allocate(steps * sizeof(ProducerStamps));
    }
    if (!consumer_) return;
    consumer_role_ = device_.make_stream(true, label("consumer role"));
    compute_ = device_.make_stream(false, label("compute stream"));
    consumer_stamps_ = device_.allocate(steps * sizeof(ConsumerStamps));
    written_ = device_.allocate(steps);
    c_ = device_.allocate(spec_.c_elements * sizeof(std::uint32_t));
    c_counts_ = device_.allocate_host(kDeviceCWindow * sizeof(Counter));
    std::memset(c_counts_.data(), 0, c_counts_.bytes());
    for (std::int64_t r = 0; r < kDeviceCWindow; ++r) {
        c_start_.push_back(device_.make_event(EventUse::timing));
        c_end_.push_back(device_.make_event(EventUse::timing));
        c_checked_.push_back(device_.make_event(EventUse::ordering));
    }
}

}  // namespace

std::unique_ptr<Pipeline> make_device_roles(const PipelineSpec& spec, Device& device,
                                            Transport& transport, Role role, MPI_Comm comm) {
    return std::make_unique<DeviceRoles>(spec, device, transport, role, comm);
}

}  // namespace gpurelay
