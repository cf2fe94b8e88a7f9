// A pass the device drives itself. DevicePass::run reads top to bottom: the pass's words reset,
// the ranks meet, the roles are launched (from here every step is stamped on the device's clock),
// the host watches them (C fed beside them, y copied out, the stop vote) until they end, and the
// stamps are read back: the clock's start and stop are the roles' own stamps, of the warm-up's
// last step and the pass's last.
//
//   producer role    wait released[k] ─ A into slot k ─ arrived[k] ───────────────┐
//   consumer role                              wait arrived[k], c_done ─ B ─ released[k], gate
//   compute stream   wait gate ─ C ─ c_done ─ check C                              │
//   io stream        (written steps, once done) y out ─ y_copied                   │
//   host             launch ─ feed C, copy y, vote on a stop ─ wait for the end ◄──┘
#include "pipeline/device_pass.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "config/transport_choice.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/step_timer.hpp"
#include "runtime/error.hpp"
#include "runtime/gpu_clocks.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/poll.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {

static_assert(kMaxDepth <= kHandOffMaxSlots, "a role's ring holds every slot depth allows");

namespace {

template <typename V>
V read_status(V& field) {
    return std::atomic_ref(field).load(std::memory_order_acquire);
}

// Nanosecond stamps of one clock to milliseconds.
double ms_between(std::uint64_t from, std::uint64_t to) {
    return static_cast<double>(static_cast<std::int64_t>(to - from)) / 1e6;
}

std::string stream_label(MPI_Comm comm, const char* what) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    return "rank " + std::to_string(rank) + ": " + what;
}

}  // namespace

// Where the host stands within a pass.
struct DevicePass::Pass {
    PassResult result;
    RowSink* sink = nullptr;
    std::int64_t end = 0;  // one past the last step, once the roles have ended
    std::uint64_t next_row = 0;
    std::int64_t c_queued = 0, c_retired = 0, copied = 0;  // the next step for each
    std::vector<std::uint8_t> written;                     // per step from the first
    std::vector<double> c_ms;                              // C's time, per step from the first
    std::vector<Counter> c_mismatches;                     // C's wrong elements, likewise
    SlotWords slots;
    std::uint32_t blocks = 1;
    SinkShare sink_share{nullptr};
};

// One pass: the words reset and the ranks met, the roles launched (the clock is theirs from
// here), watched until they end, their stamps read back.
template <typename T>
PassResult DevicePass::run(bool overlap, RowSink* sink, const StepCallback& on_step,
                           std::int64_t first_step) {
    const NvtxRange pass_range(overlap ? "pass overlap=on" : "pass overlap=off", kPassColour);
    Pass pass = begin(overlap, sink, first_step);
    meet("the barrier at a pass's start");
    pass.result.clocks_start = sample_gpu_clocks(gpu_bus_id_);
    // The profiler's range, if any, holds the whole pass: its steps are one launch.
    const bool profiled = spec_.profile_first >= 0;
    if (profiled) profiler_start(device_.backend());
    launch_roles<T>(pass);  // every step is stamped on the device's clock from here
    watch(pass, on_step);   // until both roles have ended, bounded
    end_streams();
    if (profiled) profiler_stop(device_.backend());
    pass.result.clocks_end = sample_gpu_clocks(gpu_bus_id_);
    // Where the clock started and stopped: the roles' stamps of the warm-up's last step (or
    // their start) and of the pass's last step.
    read_stamps(pass);
    return finish<T>(pass);
}

DevicePass::Pass DevicePass::begin(bool overlap, RowSink* sink, std::int64_t first_step) {
    Pass pass;
    pass.result = blank_pass_result(spec_, overlap, first_step);
    pass.result.timing = Timing::phases;
    pass.sink = consumer_ ? sink : nullptr;
    pass.sink_share = SinkShare(pass.sink);
    pass.c_queued = pass.c_retired = pass.copied = first_step;
    for (std::int64_t s = 0; s < spec_.steps; ++s) {
        const bool written = pass.sink != nullptr && spec_.writes_step(s);
        if (s < first_step) pass.next_row += written ? 1 : 0;
        if (s >= first_step) pass.written.push_back(written ? 1 : 0);
    }
    // Without C its phase is empty, as a host-launched step times it.
    pass.c_ms.assign(pass.written.size(), spec_.c_elements == 0 ? 0.0 : StepTimes::kNone);
    pass.c_mismatches.assign(pass.written.size(), 0);
    pass.slots = *transport_.slot_words();
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

// Every rank of the run at a barrier, bounded by timeout_s like every wait of a pass.
void DevicePass::meet(const char* barrier) {
    const Deadline bound(barrier);
    MPI_CHECK(MPI_Barrier(comm_));
}

template <typename T>
void DevicePass::launch_roles(Pass& pass) {
    RoleArgs role;
    const SlotWords& slots = pass.slots;
    role.ring.depth = static_cast<std::uint32_t>(slots.slots.size());
    for (std::size_t k = 0; k < slots.slots.size(); ++k) {
        role.ring.slot[k] = slots.slots[k];
        role.ring.arrived[k] = slots.arrived[k];
        role.ring.released[k] = slots.released[k];
        role.ring.uses[k] = slots.uses[k];
    }
    role.first = pass.result.first_step;
    role.steps = spec_.steps;
    role.elements = spec_.elements;
    role.seed = spec_.seed;
    role.blocks = pass.blocks;
    role.timeout_ns = static_cast<std::uint64_t>(spec_.timeout().count()) * 1000000u;
    if (consumer_) {
        ConsumerArgs<T> c;
        c.role = role;
        c.role.status = status(true);
        c.role.workspace = words()->consumer_workspace;
        c.alpha = static_cast<T>(spec_.alpha);
        c.expected = spec_.b_form;
        for (std::size_t k = 0; k < y_.size(); ++k) c.y[k] = y_[k].as<T>().data();
        c.overlap = pass.result.overlap;
        c.has_c = spec_.c_elements > 0;
        c.c_done = &words()->c_done;
        c.gate = &words()->gate;
        c.y_copied = &words()->y_copied;
        c.written = static_cast<const std::uint8_t*>(written_.data());
        c.stamps = static_cast<ConsumerStamps*>(consumer_stamps_.data());
        launch_consumer_role(c, *consumer_role_);
    }
    if (producer_) {
        ProducerArgs<T> p;
        p.role = role;
        p.role.status = status(false);
        p.role.workspace = words()->producer_workspace;
        p.form = spec_.a_form;
        p.stop = &words()->stop;
        p.stamps = static_cast<ProducerStamps*>(producer_stamps_.data());
        p.skip_reuse_wait = !slots.reuse_wait;
        launch_producer_role(p, *producer_role_);
    }
}

// The host's part while the roles run: C fed, written steps' y copied out, and the stop vote
// asked after each step this rank's last role has done (a stop it agrees on reaches the producer
// through the stop word, a few steps later). Bounded: each role's own waits run out after
// timeout_s and say which; this watch gives up after twice that without a step done.
void DevicePass::watch(Pass& pass, const StepCallback& on_step) {
    std::int64_t voted = pass.result.first_step;  // the next step to vote on
    bool stopping = false;
    Progress seen = look(pass);
    auto changed_at = std::chrono::steady_clock::now();
    const auto bound = 2 * spec_.timeout() + std::chrono::seconds(1);
    const auto longest =
        host_wait().wait == HostWait::prompt ? kPromptPause : std::chrono::microseconds(1000);
    std::chrono::microseconds pause{10};
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
        if (now.done != seen.done || now.ended != seen.ended) {
            seen = now;
            changed_at = std::chrono::steady_clock::now();
            pause = std::chrono::microseconds(10);
            continue;
        }
        if (std::chrono::steady_clock::now() - changed_at > bound) {
            throw timeout_error("launch = \"device\": a step of the roles", bound);
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(2 * pause, longest);
    }
}

// The roles' status now; a wait that ran out in either ends the rank, naming the wait and step.
DevicePass::Progress DevicePass::look(const Pass& pass) const {
    Progress p;
    p.done = spec_.steps;
    p.ended = true;
    for (const bool consumer : {false, true}) {
        if (!(consumer ? consumer_ : producer_)) continue;
        RoleStatus& st = *status(consumer);
        const auto failed = static_cast<HandOffWait>(read_status(st.failed_wait));
        if (failed != HandOffWait::none) {
            throw timeout_error(std::string("launch = \"device\": the ") +
                                    (consumer ? "consumer" : "producer") + " at step " +
                                    std::to_string(read_status(st.failed_step)) + ", " +
                                    handoff_wait_text(failed) + ",",
                                spec_.timeout());
        }
        const bool ended = read_status(st.ended) != 0;
        p.done = std::min(p.done, std::max(read_status(st.done), pass.result.first_step));
        p.ended = p.ended && ended;
        if (ended) p.end_step = read_status(st.end_step);
    }
    return p;
}

// C of the steps whose B is done retired (its time and check), and C queued up to
// kDeviceCWindow steps ahead of them, each behind its gate.
void DevicePass::feed_c(Pass& pass, std::int64_t done) {
    if (spec_.c_elements == 0) return;
    for (; pass.c_retired < done; ++pass.c_retired) retire_c(pass, pass.c_retired);
    for (; pass.c_queued < spec_.steps && pass.c_queued < pass.c_retired + kDeviceCWindow;
         ++pass.c_queued) {
        queue_c(pass.c_queued);
    }
}

void DevicePass::queue_c(std::int64_t s) {
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

// C of step s, whose B is done: its time, and its check once that has run.
void DevicePass::retire_c(Pass& pass, std::int64_t s) {
    const auto r = static_cast<std::size_t>(s % kDeviceCWindow);
    c_checked_[r]->synchronize();
    const auto i = static_cast<std::size_t>(s - pass.result.first_step);
    pass.c_ms[i] = c_end_[r]->elapsed_ms_since(*c_start_[r]);
    Counter& count = c_counts_.as<Counter>()[r];
    pass.c_mismatches[i] = count;
    count = 0;
}

// The written steps the consumer has done, copied out on the io stream; its y_copied word lets
// the consumer write the slot again.
void DevicePass::copy_rows(Pass& pass, std::int64_t done) {
    if (pass.sink == nullptr) return;
    const std::int64_t first = pass.result.first_step;
    for (; pass.copied < done; ++pass.copied) {
        const std::int64_t s = pass.copied;
        if (pass.written[static_cast<std::size_t>(s - first)] == 0) continue;
        const RowSink::Slot row = pass.sink->acquire();
        const std::size_t k = static_cast<std::size_t>(s) % y_.size();
        device_.copy_async(row.host, y_[k].data(), spec_.tensor_bytes(), *io_);
        row.ready->record(*io_);
        device_.write_word(&words()->y_copied, static_cast<std::uint32_t>(s + 1), *io_);
        pass.sink->submit(row, pass.next_row++, s);
    }
}

// Each step's phases from the roles' stamps: A and the publish (producer), the wait for the
// tensor and C, and B (consumer); a step's end is the consumer's release (the producer's publish
// on a rank that only produces), its period the time since the step before's end.
void DevicePass::read_stamps(Pass& pass) {
    PassResult& r = pass.result;
    const std::int64_t first = r.first_step;
    const auto n = static_cast<std::size_t>(pass.end - first);
    std::vector<ProducerStamps> produced(producer_ ? n : 0);
    std::vector<ConsumerStamps> consumed(consumer_ ? n : 0);
    if (!produced.empty()) {
        device_.copy_async(produced.data(), producer_stamps_.data(), n * sizeof(ProducerStamps),
                           *io_);
    }
    if (!consumed.empty()) {
        device_.copy_async(consumed.data(), consumer_stamps_.data(), n * sizeof(ConsumerStamps),
                           *io_);
    }
    io_->synchronize();
    std::uint64_t previous = read_status(status(consumer_)->started_ns);
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

// After the streams: the slots' uses counted for the transport, the ranks met, the writer
// drained, the last y checked.
template <typename T>
PassResult DevicePass::finish(Pass& pass) {
    PassResult& r = pass.result;
    r.end_step = pass.end;
    std::vector<std::uint32_t> uses(pass.slots.slots.size(), 0);
    for (std::int64_t s = r.first_step; s < pass.end; ++s) {
        ++uses[static_cast<std::size_t>(s) % uses.size()];
    }
    transport_.add_uses(uses);
    meet("the barrier at a pass's end");
    pass.sink_share.settle(r);
    if (consumer_ && pass.end > r.first_step) {
        // Spot-check samples taken on the host from the last tensor of the pass.
        constexpr std::uint64_t kSpotSamples = 4096;
        const std::int64_t last = pass.end - 1;
        Buffer host = device_.allocate_host(spec_.tensor_bytes());
        device_.copy_async(host.data(), y_[static_cast<std::size_t>(last) % y_.size()].data(),
                           spec_.tensor_bytes(), *io_);
        io_->synchronize();
        r.spot_checked += std::min<std::uint64_t>(kSpotSamples, spec_.elements);
        r.spot_mismatches +=
            spot_check_y(Span<const T>(host.as<T>()), static_cast<T>(spec_.alpha),
                         static_cast<std::uint64_t>(last), spec_.seed, kSpotSamples, spec_.b_form);
    }
    return std::move(r);
}

// Once the roles have ended: C queued past the pass's end let through (its counts dropped), and
// every stream idle, so the stamps and the slots are the host's.
void DevicePass::end_streams() {
    if (consumer_) {
        device_.write_word(&words()->gate, static_cast<std::uint32_t>(spec_.steps + 1), *io_);
    }
    synchronize_all();
    if (consumer_) std::memset(c_counts_.data(), 0, c_counts_.bytes());
}

void DevicePass::synchronize_all() {
    for (Stream* stream : {producer_role_.get(), consumer_role_.get(), compute_.get(), io_.get()}) {
        if (stream != nullptr) stream->synchronize();
    }
}

// --- Set-up -------------------------------------------------------------------------------------

DevicePass::DevicePass(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
                       MPI_Comm comm)
    : spec_(spec),
      capacity_(spec.tensor_bytes()),
      device_(device),
      transport_(transport),
      comm_(comm),
      producer_(role != Role::consumer),
      consumer_(role != Role::producer),
      gpu_bus_id_(device.info().pci_bus_id) {
    if (role == Role::relay || !transport.slot_words()) {
        throw usage_error("launch = \"device\" needs a pair over " + device_launch_request());
    }
    const std::uint32_t blocks =
        handoff_blocks(device.backend(), spec.elements, dtype_size(spec.dtype), spec.device_blocks);
    check_handoff_fits(device.backend(), blocks, blocks);
    const auto steps = static_cast<std::size_t>(spec.steps);
    words_ = device.allocate(sizeof(PassWords));
    status_ = device.allocate_host(2 * sizeof(RoleStatus));
    io_ = device.make_stream(false, stream_label(comm, "io stream"));
    if (producer_) {
        producer_role_ = device.make_stream(true, stream_label(comm, "producer role"));
        producer_stamps_ = device.allocate(steps * sizeof(ProducerStamps));
    }
    if (!consumer_) return;
    consumer_role_ = device.make_stream(true, stream_label(comm, "consumer role"));
    compute_ = device.make_stream(false, stream_label(comm, "compute stream"));
    consumer_stamps_ = device.allocate(steps * sizeof(ConsumerStamps));
    written_ = device.allocate(steps);
    for (std::int64_t k = 0; k < spec.depth; ++k) {
        y_.push_back(device.allocate(spec.tensor_bytes()));
        // NaN bytes, so a y that B never wrote is a mismatch rather than a stale right answer.
        device.fill_async(y_.back().data(), 0xff, spec.tensor_bytes(), *io_);
    }
    c_ = device.allocate(spec.c_elements * sizeof(std::uint32_t));
    c_counts_ = device.allocate_host(kDeviceCWindow * sizeof(Counter));
    std::memset(c_counts_.data(), 0, c_counts_.bytes());
    for (std::int64_t r = 0; r < kDeviceCWindow; ++r) {
        c_start_.push_back(device.make_event(EventUse::timing));
        c_end_.push_back(device.make_event(EventUse::timing));
        c_checked_.push_back(device.make_event(EventUse::ordering));
    }
    io_->synchronize();
}

DevicePass::~DevicePass() = default;

void DevicePass::resize(std::uint64_t elements) {
    resize_spec(spec_, capacity_, elements);
    transport_.set_tensor_bytes(spec_.tensor_bytes());
}

template PassResult DevicePass::run<float>(bool, RowSink*, const StepCallback&, std::int64_t);
template PassResult DevicePass::run<double>(bool, RowSink*, const StepCallback&, std::int64_t);

}  // namespace gpurelay
