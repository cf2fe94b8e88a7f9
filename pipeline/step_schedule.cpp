// The schedule of one step: A and the send on the producer stream, the receive on the comm
// stream, C, B and the checks on the compute stream, y out on the io stream, ordered by events;
// and the buffers, streams and events it uses, allocated once (the memory plan).
#include <cstring>
#include <optional>

#include "comm/mpi_error.hpp"
#include "pipeline/pipeline_impl.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

using pipeline_detail::push_range;
using pipeline_detail::RangePhase;
using pipeline_detail::StepMarks;
using pipeline_detail::StepRange;
using pipeline_detail::timing_ring_size;

namespace {

// ipc_engine = "sm": A writes into the consumer's slots (Transport::produce_into), so the
// producer has no send slots of its own.
bool a_writes_in_place(const Config& config) {
    return config.transport == TransportKind::ipc && config.ipc_engine == IpcEngine::sm;
}

}  // namespace

MemoryPlan plan_memory(const Config& config, Role role) {
    const bool producer = role != Role::consumer;
    const bool consumer = role != Role::producer;
    const auto depth = static_cast<std::uint64_t>(config.depth);
    const auto ring = static_cast<std::uint64_t>(timing_ring_size(config));
    MemoryPlan plan;
    plan.slot_bytes = config.tensor_bytes();
    plan.slots = (producer && !a_writes_in_place(config) ? depth : 0) + (consumer ? 2 * depth : 0);
    if (consumer) {
        plan.c_bytes = config.c_elements * sizeof(std::uint32_t);
        plan.counter_host_bytes = ring * 2 * sizeof(Counter);
    }
    if (config.graphs) plan.step_word_bytes = 2 * sizeof(std::uint64_t);
    return plan;
}

Pipeline::Impl::Impl(const Config& cfg, Device& dev, Transport& tr, const PairPlacement& place,
                     MPI_Comm c)
    : config(cfg),
      device(dev),
      transport(tr),
      placement(place),
      mpi_comm(c),
      producer(place.role != Role::consumer),
      consumer(place.role != Role::producer),
      collective(cfg.pattern != Pattern::pairs),
      a_form(produced_form(cfg, place)),
      b_form(received_form(cfg, place)),
      bytes(cfg.tensor_bytes()),
      depth(static_cast<std::size_t>(cfg.depth)),
      ring(timing_ring_size(cfg)),
      plan(plan_memory(cfg, place.role)) {
    if (cfg.graphs) {
        cycle_words_host = device.allocate_host(plan.step_word_bytes);
        cycle_word_device = device.allocate(plan.step_word_bytes);
    }
    if (producer) {
        producer_stream = device.make_stream(false, stream_label("producer stream"));
        for (std::size_t k = 0; k < depth && !a_writes_in_place(cfg); ++k) {
            send_slots.push_back(device.allocate(bytes));
        }
    }
    if (consumer) {
        // The comm stream gets the higher priority: the compute stream's B waits on it, and
        // C must not delay the transfer it is meant to hide.
        comm_stream = device.make_stream(true, stream_label("comm stream"));
        compute_stream = device.make_stream(false, stream_label("compute stream"));
        io_stream = device.make_stream(false, stream_label("io stream"));
        for (std::size_t k = 0; k < depth; ++k) {
            // Where the tensors land: the transport's slots when it places them (ipc), else
            // our own.
            void* slot = transport.receive_slot(k);
            if (slot == nullptr) {
                recv_buffers.push_back(device.allocate(bytes));
                slot = recv_buffers.back().data();
            }
            recv_slots.push_back(slot);
            y_slots.push_back(device.allocate(bytes));
            recv_done.push_back(device.make_event(EventUse::ordering));
            x_free.push_back(device.make_event(EventUse::ordering));
            y_free.push_back(device.make_event(EventUse::ordering));
        }
        c_buffer = device.allocate(plan.c_bytes);
        // B and C's check add their mismatches here, in the step's ring slot: host memory
        // the kernels write directly (pinned, so mapped on a GPU), read and zeroed by the
        // host when it retires the step, so a step needs no memset and no copy.
        counters_host = device.allocate_host(plan.counter_host_bytes);
        std::memset(counters_host.data(), 0, counters_host.bytes());
        y_pending.assign(depth, false);
    }
    for (std::size_t r = 0; r < ring; ++r) {
        StepMarks m;
        auto timing = [&] { return device.make_event(EventUse::timing); };
        if (producer) {
            m.a_start = timing();
            m.a_end = timing();
            m.send_start = timing();
            m.send_end = timing();
        }
        if (consumer) {
            m.recv_start = timing();
            m.recv_end = timing();
            m.c_start = timing();
            m.c_end = timing();
            m.b_start = timing();
            m.b_end = timing();
        }
        m.end = timing();
        marks.push_back(std::move(m));
    }
    poison_slots();
}

std::string Pipeline::Impl::stream_label(const char* what) const {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(mpi_comm, &rank));
    return "rank " + std::to_string(rank) + " " + std::string(to_string(placement.role)) + ": " +
           what;
}

// NaN bytes in every receive and result slot, so a read of data that never arrived is a
// mismatch rather than a stale right answer.
void Pipeline::Impl::poison_slots() {
    if (!consumer) return;
    for (std::size_t k = 0; k < depth; ++k) {
        device.fill_async(recv_slots[k], 0xff, bytes, *compute_stream);
        device.fill_async(y_slots[k].data(), 0xff, bytes, *compute_stream);
    }
    compute_stream->synchronize();
}

void Pipeline::Impl::synchronize_all() {
    if (producer) producer_stream->synchronize();
    if (consumer) {
        comm_stream->synchronize();
        compute_stream->synchronize();
        io_stream->synchronize();
    }
}

// Opens `phase`'s range of step `step` where its timing events are recorded: on a host
// stream, by host ops on the stream's worker thread in queue order, so the range spans what
// the events time; on a CUDA stream, on this thread around the calls that queue the phase
// (Nsight Systems projects them onto the GPU work those calls launch).
void Pipeline::Impl::begin_range(RangePhase phase, std::int64_t step, Stream& stream) {
    if constexpr (!nvtx::kBuilt) return;
    // A capture queues nothing that runs now; its replays get one range per launch.
    if (capturing) return;
    const StepRange range{step, phase, step < config.warmup};
    if (stream.backend() == Backend::host) {
        device.enqueue_host([range] { push_range(range); }, stream);
    } else {
        push_range(range);
    }
}

// Closes the range begin_range opened last on `stream`.
void Pipeline::Impl::end_range(Stream& stream) {
    if constexpr (!nvtx::kBuilt) return;
    if (capturing) return;
    if (stream.backend() == Backend::host) {
        device.enqueue_host([] { nvtx::pop(); }, stream);
    } else {
        nvtx::pop();
    }
}

// Eager steps give the kernels the step number itself; a captured graph gives them the cycle's
// word and their offset in it (graph_step).
template <typename T>
void Pipeline::Impl::queue_step(std::int64_t s, bool overlap, ResultWriter* writer,
                                std::uint64_t& next_row) {
    const StepArg step(static_cast<std::uint64_t>(s));
    marks[static_cast<std::size_t>(s) % ring].phases = phase_timed(s);
    mark_ends(s, 1, false, unit_ends(s, false, writer));
    queue_exchange<T>(s, overlap, step);
    if (consumer) queue_compute<T>(s, overlap, step);
    queue_write(s, writer, next_row);
}

// A and the send (producer stream); the receive (comm stream).
template <typename T>
void Pipeline::Impl::queue_exchange(std::int64_t s, bool overlap, StepArg step) {
    const std::size_t k = static_cast<std::size_t>(s) % depth;
    StepMarks& m = marks[static_cast<std::size_t>(s) % ring];
    // The receive is queued here, beside the send, unless it waits after C (queue_compute).
    const bool receives = consumer && !receive_after_c(overlap);
    Stream* comm = consumer ? &receive_stream(overlap) : nullptr;
    // A collective is one call on one stream: a rank that plays both roles in one queues A and
    // the collective on its receive stream (whose order then keeps A's slot until the collective
    // has read it, as the producer stream does for a send).
    Stream* out = !producer ? nullptr : collective && consumer ? comm : producer_stream.get();

    // Where A writes: the consumer's slot itself (after its reuse wait) when the transport has A
    // write in place, else this rank's send slot.
    void* x = nullptr;
    if (producer) {
        x = transport.produce_into(k, *out);
        if (x == nullptr) x = send_slots[k].data();
        if (m.phases) m.a_start->record(*out);
        begin_range(RangePhase::a, s, *out);
        launch_a(Span<T>{static_cast<T*>(x), bytes / sizeof(T)}, step, config.seed, *out, a_form);
        end_range(*out);
        if (m.phases) m.a_end->record(*out);
        // The send is timed from after what it waits for (ipc: the slot's release), so that its
        // phase is the transfer alone.
        transport.queue_send_wait(k, *out);
        if (m.phases) m.send_start->record(*out);
    }
    if (receives) {
        // Slot k's x may be overwritten only once B of step s-depth, its last reader, is done
        // (without overlap B ran before, on this same stream).
        // In a graph, only when that B is in the same graph (an earlier graph has finished).
        const bool in_scope = !capturing || s - static_cast<std::int64_t>(depth) >= capture_first;
        if (overlap && in_scope && !config.debug_skip_reuse_wait) comm->wait(*x_free[k]);
        if (m.phases && times_receive()) m.recv_start->record(*comm);
    }
    // On a CUDA stream both ranges are host ranges around the group, so they nest.
    if (producer) begin_range(RangePhase::send, s, *out);
    if (receives) begin_range(RangePhase::recv, s, *comm);
    std::optional<SendSide> send;
    std::optional<RecvSide> recv;
    if (producer) send.emplace(x, bytes, placement.peer, *out, k);
    if (receives) recv.emplace(recv_slots[k], bytes, placement.peer, *comm, k);
    transport.exchange(send ? &*send : nullptr, recv ? &*recv : nullptr);
    if (receives) end_range(*comm);
    if (producer) {
        end_range(*out);
        if (m.phases) m.send_end->record(*out);
        if (!consumer) end_step(s, *out);
    }
    if (!receives) return;
    if (m.phases && times_receive()) m.recv_end->record(*comm);
    if (overlap) recv_done[k]->record(*comm);
}

// C, B and the checks (compute stream); B and the check count into the step's ring slot.
template <typename T>
void Pipeline::Impl::queue_compute(std::int64_t s, bool overlap, StepArg step) {
    const std::size_t k = static_cast<std::size_t>(s) % depth;
    const std::size_t r = static_cast<std::size_t>(s) % ring;
    StepMarks& m = marks[r];
    Stream& compute = *compute_stream;
    const auto c_iterations = static_cast<std::uint32_t>(config.c_iterations);
    Counter* slot_counters = counters_host.as<Counter>().data() + 2 * r;
    // c_elements = 0 disables C: its launches and its check would do nothing.
    const bool has_c = config.c_elements > 0;
    if (m.phases) m.c_start->record(compute);
    if (has_c) {
        begin_range(RangePhase::c, s, compute);
        launch_c(c_buffer.as<std::uint32_t>(), step, config.seed, c_iterations, compute);
        end_range(compute);
    }
    if (m.phases) m.c_end->record(compute);
    // The GPU, not the host, waits for the tensor to arrive (received on the comm stream
    // with overlap); and for slot k's previous y to be copied out before B overwrites it,
    // when it was being written.
    begin_range(RangePhase::wait, s, compute);
    if (receive_after_c(overlap)) {
        // The receive itself is the wait (not phase-timed as a receive: the producer's send
        // times the transfer).
        const RecvSide recv{recv_slots[k], bytes, placement.peer, compute, k};
        begin_range(RangePhase::recv, s, compute);
        transport.exchange(nullptr, &recv);
        end_range(compute);
    } else if (overlap) {
        compute.wait(*recv_done[k]);
    }
    // (A graph waits for y_free before its launch: launch_unit.)
    if (!capturing && y_pending[k]) compute.wait(*y_free[k]);
    if (!capturing) y_pending[k] = false;
    end_range(compute);
    if (m.phases) m.b_start->record(compute);
    begin_range(RangePhase::b, s, compute);
    launch_b(Span<const T>{static_cast<const T*>(recv_slots[k]), bytes / sizeof(T)},
             y_slots[k].as<T>(), static_cast<T>(config.alpha), step, config.seed, slot_counters,
             compute, b_form);
    end_range(compute);
    if (m.phases) m.b_end->record(compute);
    if (overlap && !receive_after_c(overlap)) x_free[k]->record(compute);
    // A transport that writes slot k from the producer's process waits for this instead.
    transport.release(k, compute);
    if (has_c) {
        begin_range(RangePhase::verify, s, compute);
        launch_verify_c(Span<const std::uint32_t>(c_buffer.as<std::uint32_t>()), step, config.seed,
                        c_iterations, slot_counters + 1, compute);
        end_range(compute);
    }
    end_step(s, compute);
}

// y of step s to the writer (io stream), when the run keeps that step. Always queued on the
// host, graphs or not: which steps are written varies, and the writer's slots come from it.
void Pipeline::Impl::queue_write(std::int64_t s, ResultWriter* writer, std::uint64_t& next_row) {
    if (!consumer || writer == nullptr || !config.writes_step(s)) return;
    const std::size_t k = static_cast<std::size_t>(s) % depth;
    const ResultWriter::Slot slot = writer->acquire();
    io_stream->wait(*marks[static_cast<std::size_t>(s) % ring].end);  // B has written y
    begin_range(RangePhase::write, s, *io_stream);
    device.copy_async(slot.host, y_slots[k].data(), bytes, *io_stream);
    end_range(*io_stream);
    slot.ready->record(*io_stream);
    y_free[k]->record(*io_stream);
    y_pending[k] = true;
    writer->submit(slot, next_row++, s);
}

// queue_step, and graph_capture.cpp's captures, for both element types (with_dtype's).
template void Pipeline::Impl::queue_step<float>(std::int64_t, bool, ResultWriter*, std::uint64_t&);
template void Pipeline::Impl::queue_step<double>(std::int64_t, bool, ResultWriter*, std::uint64_t&);
template void Pipeline::Impl::queue_exchange<float>(std::int64_t, bool, StepArg);
template void Pipeline::Impl::queue_exchange<double>(std::int64_t, bool, StepArg);
template void Pipeline::Impl::queue_compute<float>(std::int64_t, bool, StepArg);
template void Pipeline::Impl::queue_compute<double>(std::int64_t, bool, StepArg);

}  // namespace gpurelay
