// Messages between two ranks, rank 0 sending and rank 1 receiving:
// - the host-staged MPI transport, next to its ceilings (GPU only): pinned D2H and H2D copies on
//   rank 0, and plain MPI between pinned host buffers: a staged message can go no faster than
//   the slowest of its three legs;
// - when the two ranks drive two different GPUs, a plain ncclSend/ncclRecv loop: the reference
//   for the pipeline's NCCL transfers between those GPUs, and plain ncclBroadcast and
//   ncclAllReduce loops over both ranks (algbw and busbw as nccl-tests gives them);
// - the ipc transport (rank 0 copying into rank 1's slots, CUDA IPC on a GPU, a shared-memory
//   window on the CPU), next to its ceiling on a GPU: a device-to-device copy of the same bytes
//   inside rank 0's process, on the same GPU as the slots when the two ranks share one.
//
//   mpirun -np 2 bench_transport --benchmark_out=transport.json --benchmark_out_format=json
//
// One rank (mpirun -np 1) runs only the plain broadcast and all-reduce loops, on a one-rank
// communicator (both are then copies on its GPU); without a GPU it says so and exits 0.
// Both ranks run the same benchmarks with fixed iteration counts, so they stay in lock-step; only
// rank 0 reports. A staged iteration is timed on rank 0 from before the send until rank 1's
// zero-byte acknowledgement arrives, so it covers delivery into rank 1's buffer, not just the
// send. An NCCL iteration is a batch of messages queued back to back, as nccl-tests times them:
// the slower rank's wall time from a barrier until its stream has finished, over the batch.
// Without a GPU both ranks use the host device (the same transport, on host memory).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bench/bench_support.hpp"
#include "kernels/kernels.hpp"
#include "mpi/error.hpp"
#include "mpi/pairing.hpp"
#include "mpi/session.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/timeout.hpp"
#include "transport/transport.hpp"

#if GPURELAY_HAVE_CUDA
#include "bench/plain_nccl_comm.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay::bench {
namespace {

constexpr std::uint64_t kStep = 3;
constexpr std::uint32_t kSeed = 20240611;
constexpr int kSender = 0;
constexpr int kReceiver = 1;
constexpr int kAckTag = 901;
constexpr int kVerdictTag = 902;
constexpr auto kWaitTimeout = kDefaultTimeout;
// NCCL and ipc messages per timed batch: enough to hide the launch of the first and the host's
// wake-up after the last, as in a pipeline that keeps several messages in flight.
constexpr int kBatch = 64;
// The ipc transport's receive slots: two, as a pipeline of depth 2, so the release of one
// message's slot overlaps the copy of the next; and four, to see what more slack buys.
constexpr std::size_t kIpcSlots = 2;
constexpr std::size_t kIpcWideSlots = 4;

struct TransportBench {
    TransportBench(int rank_in, bool use_gpu, int gpu_ordinal, std::size_t max_bytes)
        : rank(rank_in),
          on_gpu(use_gpu),
          device(use_gpu ? make_cuda_device(gpu_ordinal) : make_host_device(kWaitTimeout)),
          stream(device->make_stream(true, "bench comm")),
          start(device->make_event(EventUse::timing)),
          stop(device->make_event(EventUse::timing)),
          message(device->allocate(max_bytes)),
          counter(device->allocate(sizeof(Counter))),
          counter_host(device->allocate_host(sizeof(Counter))) {
        if (on_gpu) pinned = device->allocate_host(max_bytes);
        if (rank == kSender) {
            // Real data: A's values, which the receiver checks after each benchmark.
            launch_a(message.as<float>(), kStep, kSeed, *stream);
            if (on_gpu) device->copy_async(pinned.data(), message.data(), max_bytes, *stream);
        } else {
            scratch = device->allocate(max_bytes);
        }
        stream->synchronize();
        pair.role = rank == kSender ? Role::producer : Role::consumer;
        pair.producer = kSender;
        pair.consumer = kReceiver;
        pair.peer = rank == kSender ? kReceiver : kSender;
        if (rank == kSender && on_gpu) copy_target = device->allocate(max_bytes);
    }

    // A transport of `kind` for messages of `bytes` through `slots` slots, made when a benchmark
    // first needs it (collective: both ranks run the benchmarks in one order), its producer's
    // slots holding A's values.
    enum class Kind { staged, ipc, ipc_in_place };
    Transport& sized(Kind kind, std::size_t bytes, std::size_t slots) {
        const auto key = std::make_tuple(static_cast<int>(kind), bytes, slots);
        auto found = transports.find(key);
        if (found != transports.end()) return *found->second;
        TransportOptions options{bytes, TransportOptions{}.chunk_bytes, kWaitTimeout};
        options.slots = slots;
        options.produce_in_place = kind == Kind::ipc_in_place;
        std::unique_ptr<Transport> made =
            kind == Kind::staged ? make_mpi_staged_transport(MPI_COMM_WORLD, pair, *device, options)
                                 : make_ipc_transport(MPI_COMM_WORLD, pair, *device, options);
        if (rank == kSender && kind != Kind::ipc_in_place) {
            for (std::size_t k = 0; k < slots; ++k) {
                device->copy_async(made->acquire(k, *stream), message.data(), bytes, *stream);
            }
            stream->synchronize();
        }
        return *transports.emplace(key, std::move(made)).first->second;
    }

    // Rank 1: how many of the first `bytes` received at `data` (by default the message buffer)
    // differ from A's values (B with alpha 1 counts them; its output goes to scratch).
    Counter count_wrong(std::size_t bytes, const void* data = nullptr) {
        const auto* received = static_cast<const float*>(data ? data : message.data());
        device->fill_async(counter.data(), 0, sizeof(Counter), *stream);
        launch_b(Span<const float>{received, bytes / 4},
                 Span<float>{scratch.as<float>().data(), bytes / 4}, 1.0f, kStep, kSeed,
                 counter.as<Counter>().data(), *stream);
        device->copy_async(counter_host.data(), counter.data(), sizeof(Counter), *stream);
        stream->synchronize();
        return *counter_host.as<Counter>().data();
    }

    int rank;
    bool on_gpu;
    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> start;
    std::unique_ptr<Event> stop;
    Buffer message;  // rank 0: what it sends; rank 1: where it lands
    Buffer scratch;  // rank 1: B's output while checking
    Buffer pinned;   // on a GPU: the host side of the ceiling copies and of plain MPI
    Buffer counter;
    Buffer counter_host;
    Buffer copy_target;  // rank 0 on a GPU: where the device-to-device ceiling copies to
    PairPlacement pair;  // rank 0 produces, rank 1 consumes
    // Declared last: destroyed first, while the buffers their queued work used still exist.
    std::map<std::tuple<int, std::size_t, std::size_t>, std::unique_ptr<Transport>> transports;
};

void barrier() { MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

// One message from rank 0 to rank 1 through `t`'s slot 0, finished on both sides: rank 0
// returns when rank 1 has it. Returns where it landed (rank 1).
const void* one_message(TransportBench& tb, Transport& t) {
    if (tb.rank == kSender) {
        t.acquire(0, *tb.stream);
        t.publish(0, *tb.stream);
        tb.stream->synchronize();
        MPI_CHECK(
            MPI_Recv(nullptr, 0, MPI_BYTE, kReceiver, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        return nullptr;
    }
    const void* landed = t.await(0, *tb.stream);
    t.release(0, *tb.stream);
    tb.stream->synchronize();
    MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, kSender, kAckTag, MPI_COMM_WORLD));
    return landed;
}

#if GPURELAY_HAVE_CUDA
// Rank 1 poisons its message buffer (where plain loops land), so stale data from an earlier
// benchmark cannot pass the check.
[[maybe_unused]] void prepare_receiver(TransportBench& tb, std::size_t bytes) {
    if (tb.rank != kReceiver) return;
    tb.device->fill_async(tb.message.data(), 0xff, bytes, *tb.stream);
    tb.stream->synchronize();
}
#endif

// Rank 1 checks the last message that arrived (at `received`, by default its message buffer) and
// tells rank 0, which reports; then the bytes.
void check_delivery(benchmark::State& state, TransportBench& tb, std::size_t bytes,
                    std::int64_t messages, const void* received = nullptr) {
    std::uint64_t wrong = 0;
    if (tb.rank == kReceiver) {
        wrong = tb.count_wrong(bytes, received);
        MPI_CHECK(MPI_Send(&wrong, 1, MPI_UINT64_T, kSender, kVerdictTag, MPI_COMM_WORLD));
    } else {
        MPI_CHECK(MPI_Recv(&wrong, 1, MPI_UINT64_T, kReceiver, kVerdictTag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    }
    if (wrong != 0) {
        fail(state, "rank 1 received " + std::to_string(wrong) + " wrong values");
    }
    state.SetBytesProcessed(messages * static_cast<std::int64_t>(bytes));
}

// Times `one` (one message, finished on both ranks when it returns) per iteration, after a
// warm-up, with both ranks starting together.
template <typename One>
void time_messages(benchmark::State& state, One&& one) {
    barrier();
    one();  // warm-up
    barrier();
    for (auto _ : state) {
        const auto begin = std::chrono::steady_clock::now();
        one();
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - begin;
        state.SetIterationTime(elapsed.count());
    }
}

// Times batches of kBatch messages queued back to back by `queue_one`, as nccl-tests times them:
// the slower rank's wall time from a barrier until its stream has finished, over the batch. One
// message first, untimed (a warm-up; NCCL's first also connects). `queue_one` queues on
// `stream`. Returns the timed seconds per message, summed over the iterations.
template <typename QueueOne>
double time_batches(benchmark::State& state, Stream& stream, QueueOne&& queue_one) {
    queue_one();
    stream.synchronize();
    double total = 0.0;
    for (auto _ : state) {
        barrier();
        const auto begin = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i) queue_one();
        stream.synchronize();
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        // The message is delivered when the slower side is done.
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        state.SetIterationTime(elapsed / kBatch);
        total += elapsed / kBatch;
    }
    return total;
}

// The transport's receive slots start poisoned, so stale data cannot pass the check.
void transport_staged(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    Transport& staged = tb.sized(TransportBench::Kind::staged, bytes, 1);
    const void* landed = nullptr;
    time_messages(state, [&] { landed = one_message(tb, staged); });
    check_delivery(state, tb, bytes, static_cast<std::int64_t>(state.iterations()), landed);
}

// Plain MPI between the ranks' pinned host buffers, no GPU: what the MPI library itself moves
// between two processes, the ceiling of the staged transport's middle leg.
void transport_mpi_pinned(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    const auto count = static_cast<int>(bytes);
    auto one = [&] {
        if (tb.rank == kSender) {
            MPI_CHECK(MPI_Send(tb.pinned.data(), count, MPI_BYTE, kReceiver, 0, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(nullptr, 0, MPI_BYTE, kReceiver, kAckTag, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        } else {
            MPI_CHECK(MPI_Recv(tb.pinned.data(), count, MPI_BYTE, kSender, 0, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, kSender, kAckTag, MPI_COMM_WORLD));
        }
    };
    // The message lands in rank 1's pinned buffer: poisoned there, so an earlier benchmark's
    // data cannot pass the check.
    if (tb.rank == kReceiver) std::memset(tb.pinned.data(), 0xff, bytes);
    time_messages(state, one);
    // Rank 1 moves what arrived onto its GPU, where the usual check reads it.
    if (tb.rank == kReceiver) {
        tb.device->copy_async(tb.message.data(), tb.pinned.data(), bytes, *tb.stream);
        tb.stream->synchronize();
    }
    check_delivery(state, tb, bytes, static_cast<std::int64_t>(state.iterations()));
}

#if GPURELAY_HAVE_CUDA
// Queues one plain ncclSend (rank 0) or ncclRecv (rank 1) of `bytes`.
void queue_nccl_message(TransportBench& tb, const PlainNcclComm& nccl, std::size_t bytes) {
    const cudaStream_t stream = cuda_handle(*tb.stream);
    if (tb.rank == kSender) {
        NCCL_CHECK(ncclSend(tb.message.data(), bytes, ncclChar, kReceiver, nccl.get(), stream));
    } else {
        NCCL_CHECK(ncclRecv(tb.message.data(), bytes, ncclChar, kSender, nccl.get(), stream));
    }
}

void transport_nccl_plain(benchmark::State& state, TransportBench& tb, const PlainNcclComm& nccl,
                          std::size_t bytes) {
    barrier();
    prepare_receiver(tb, bytes);
    time_batches(state, *tb.stream, [&] { queue_nccl_message(tb, nccl, bytes); });
    check_delivery(state, tb, bytes, static_cast<std::int64_t>(state.iterations()));
}

// Plain collectives over the world communicator, as nccl-tests runs them (out of place, root 0):
// every rank has its own GPU; with one rank both are copies on its GPU.
struct CollectiveBench {
    CollectiveBench(int size_in, int rank_in, Device& device_in, std::size_t max_bytes,
                    const ncclUniqueId& id)
        : size(size_in),
          rank(rank_in),
          device(device_in),
          stream(device.make_stream(true, "bench collective")),
          send(device.allocate(max_bytes)),
          recv(device.allocate(max_bytes)),
          scratch(device.allocate(max_bytes)),
          counter(device.allocate(sizeof(Counter))),
          counter_host(device.allocate_host(sizeof(Counter))),
          nccl(size_in, rank_in, id) {}

    int size;
    int rank;
    Device& device;
    std::unique_ptr<Stream> stream;
    Buffer send;     // what this rank contributes (the root's tensor, or its all-reduce share)
    Buffer recv;     // where the collective's result lands
    Buffer scratch;  // B's output while checking
    Buffer counter;
    Buffer counter_host;
    // Declared last: destroyed first, while the buffers its queued work used still exist.
    PlainNcclComm nccl;
};

// Times batches of one plain collective of `bytes` (an all-reduce sums bytes / 4 floats), then
// checks the last result on every rank against A's formula (a broadcast: the root's tensor; an
// all-reduce: the sum of every rank's share, exact by construction) and reports nccl-tests'
// algbw (bytes / time) and busbw (algbw times the bus factor), in GB/s (1e9 bytes).
void collective_plain(benchmark::State& state, CollectiveBench& cb, Collective collective,
                      std::size_t bytes) {
    const std::size_t count = bytes / 4;
    const Span<float> send{cb.send.as<float>().data(), count};
    const TensorForm share =
        collective == Collective::allreduce ? allreduce_share(cb.rank) : TensorForm{};
    const TensorForm expected =
        collective == Collective::allreduce ? allreduce_sum(cb.size) : TensorForm{};
    launch_a(send, kStep, kSeed, *cb.stream, share);
    cb.device.fill_async(cb.recv.data(), 0xff, bytes, *cb.stream);  // poison: no stale pass
    cb.stream->synchronize();
    barrier();
    const cudaStream_t stream = cuda_handle(*cb.stream);
    const double seconds = time_batches(state, *cb.stream, [&] {
        if (collective == Collective::broadcast) {
            NCCL_CHECK(ncclBroadcast(cb.send.data(), cb.recv.data(), bytes, ncclChar, 0,
                                     cb.nccl.get(), stream));
        } else {
            NCCL_CHECK(ncclAllReduce(cb.send.data(), cb.recv.data(), count, ncclFloat, ncclSum,
                                     cb.nccl.get(), stream));
        }
    });
    cb.device.fill_async(cb.counter.data(), 0, sizeof(Counter), *cb.stream);
    launch_b(Span<const float>{cb.recv.as<float>().data(), count},
             Span<float>{cb.scratch.as<float>().data(), count}, 1.0f, kStep, kSeed,
             cb.counter.as<Counter>().data(), *cb.stream, expected);
    cb.device.copy_async(cb.counter_host.data(), cb.counter.data(), sizeof(Counter), *cb.stream);
    cb.stream->synchronize();
    std::uint64_t wrong = *cb.counter_host.as<Counter>().data();
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (wrong != 0) {
        fail(state, std::to_string(wrong) + " wrong values over the ranks' results");
        return;
    }
    const auto messages = static_cast<std::int64_t>(state.iterations());
    state.SetBytesProcessed(messages * static_cast<std::int64_t>(bytes));
    // bytes / the mean time of one collective, in GB/s.
    const double algbw =
        seconds > 0.0 ? static_cast<double>(bytes) * static_cast<double>(messages) / seconds / 1e9
                      : 0.0;
    state.counters["algbw_gbps"] = algbw;
    state.counters["busbw_gbps"] = algbw * bus_factor(collective, cb.size);
    state.counters["ranks"] = cb.size;
}
#endif

// The ipc transport (of `slots` slots), as the pipeline drives it: rank 0 sends slot i % slots,
// rank 1 receives it and releases the slot (no kernel reads it in between: this is the
// transport alone). Its slots start poisoned, so a copy that never came fails the check.
void transport_ipc(benchmark::State& state, TransportBench& tb, std::size_t slots,
                   std::size_t bytes) {
    Transport& ipc = tb.sized(TransportBench::Kind::ipc, bytes, slots);
    std::size_t next = 0;
    const void* landed = nullptr;
    auto queue_one = [&] {
        const std::size_t slot = next++ % slots;
        if (tb.rank == kSender) {
            ipc.acquire(slot, *tb.stream);
            ipc.publish(slot, *tb.stream);
        } else {
            landed = ipc.await(slot, *tb.stream);
            ipc.release(slot, *tb.stream);
        }
    };
    barrier();
    time_batches(state, *tb.stream, queue_one);
    check_delivery(state, tb, bytes, static_cast<std::int64_t>(state.iterations()), landed);
}

// A diagnosis, not a transport: rank 0 copies into rank 1's mapped slot back to back (where A
// would write it in place), with no sequence words, so rank 1's process does nothing per
// message. Against transport/ipc_gpu it shows what the per-message handshake between the two
// processes costs.
void ipc_copy_only(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    Transport& ipc = tb.sized(TransportBench::Kind::ipc_in_place, bytes, 1);
    barrier();
    void* slot = tb.rank == kSender ? ipc.acquire(0, *tb.stream) : nullptr;
    time_batches(state, *tb.stream, [&] {
        if (tb.rank == kSender) tb.device->copy_async(slot, tb.message.data(), bytes, *tb.stream);
    });
    // One word says the copies are in; then rank 1 checks its slot.
    const void* landed = nullptr;
    if (tb.rank == kSender) ipc.publish(0, *tb.stream);
    if (tb.rank == kReceiver) landed = ipc.await(0, *tb.stream);
    tb.stream->synchronize();
    check_delivery(state, tb, bytes, static_cast<std::int64_t>(state.iterations()), landed);
    if (tb.rank == kReceiver) ipc.release(0, *tb.stream);
    tb.stream->synchronize();
}

// The ipc transport's ceiling on a GPU: rank 0 copies the same bytes device to device in its own
// process, a batch at a time, timed with events; rank 1 only keeps in step.
void device_copy(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    barrier();
    if (tb.rank != kSender) {
        for (auto _ : state) state.SetIterationTime(0.0);
        barrier();
        return;
    }
    tb.device->copy_async(tb.copy_target.data(), tb.message.data(), bytes, *tb.stream);  // warm-up
    tb.stream->synchronize();
    for (auto _ : state) {
        tb.start->record(*tb.stream);
        for (int i = 0; i < kBatch; ++i) {
            tb.device->copy_async(tb.copy_target.data(), tb.message.data(), bytes, *tb.stream);
        }
        tb.stop->record(*tb.stream);
        tb.stop->synchronize();
        state.SetIterationTime(tb.stop->elapsed_ms_since(*tb.start) * 1e-3 / kBatch);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(bytes));
    barrier();
}

enum class CopyDirection { device_to_host, host_to_device };

// A pinned copy on rank 0, timed with events; rank 1 only keeps in step.
void pinned_copy(benchmark::State& state, TransportBench& tb, std::size_t bytes,
                 CopyDirection direction) {
    barrier();
    if (tb.rank != kSender) {
        for (auto _ : state) state.SetIterationTime(0.0);
        barrier();
        return;
    }
    void* dst = direction == CopyDirection::device_to_host ? tb.pinned.data() : tb.message.data();
    const void* src =
        direction == CopyDirection::device_to_host ? tb.message.data() : tb.pinned.data();
    tb.device->copy_async(dst, src, bytes, *tb.stream);  // warm-up
    tb.stream->synchronize();
    for (auto _ : state) {
        tb.start->record(*tb.stream);
        tb.device->copy_async(dst, src, bytes, *tb.stream);
        tb.stop->record(*tb.stream);
        tb.stop->synchronize();
        state.SetIterationTime(tb.stop->elapsed_ms_since(*tb.start) * 1e-3);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(bytes));
    barrier();
}

template <typename Body>
void register_sized(const char* name, std::size_t bytes, Body body) {
    benchmark::RegisterBenchmark(name, body)
        ->Arg(static_cast<std::int64_t>(bytes))
        ->Iterations(iterations_for(bytes))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

void register_all(TransportBench& tb, const std::vector<std::size_t>& sizes) {
    const std::string staged = tb.on_gpu ? "transport/mpi_staged_gpu" : "transport/mpi_staged_host";
    for (const std::size_t bytes : sizes) {
        register_sized(staged.c_str(), bytes, [&tb, bytes](benchmark::State& state) {
            transport_staged(state, tb, bytes);
        });
    }
    const std::string ipc = tb.on_gpu ? "transport/ipc_gpu" : "transport/ipc_host";
    for (const std::size_t bytes : sizes) {
        register_sized(ipc.c_str(), bytes, [&tb, bytes](benchmark::State& state) {
            transport_ipc(state, tb, kIpcSlots, bytes);
        });
    }
    for (const std::size_t bytes : sizes) {
        register_sized((ipc + "_4slots").c_str(), bytes, [&tb, bytes](benchmark::State& state) {
            transport_ipc(state, tb, kIpcWideSlots, bytes);
        });
    }
    for (const std::size_t bytes : sizes) {
        register_sized((ipc + "_copy_only").c_str(), bytes,
                       [&tb, bytes](benchmark::State& s) { ipc_copy_only(s, tb, bytes); });
    }
    if (!tb.on_gpu) return;
    for (const std::size_t bytes : sizes) {
        register_sized("gpu/copy_d2d", bytes,
                       [&tb, bytes](benchmark::State& state) { device_copy(state, tb, bytes); });
    }
    for (const std::size_t bytes : sizes) {
        register_sized("transport/mpi_plain_pinned", bytes, [&tb, bytes](benchmark::State& state) {
            transport_mpi_pinned(state, tb, bytes);
        });
    }
    const std::pair<const char*, CopyDirection> copies[] = {
        {"gpu/copy_d2h", CopyDirection::device_to_host},
        {"gpu/copy_h2d", CopyDirection::host_to_device},
    };
    for (const auto& [name, direction] : copies) {
        for (const std::size_t bytes : sizes) {
            register_sized(name, bytes, [&tb, bytes, direction = direction](benchmark::State& s) {
                pinned_copy(s, tb, bytes, direction);
            });
        }
    }
}

#if GPURELAY_HAVE_CUDA
void register_nccl(TransportBench& tb, const PlainNcclComm& nccl,
                   const std::vector<std::size_t>& sizes) {
    for (const std::size_t bytes : sizes) {
        register_sized("transport/nccl_plain", bytes, [&tb, &nccl, bytes](benchmark::State& state) {
            transport_nccl_plain(state, tb, nccl, bytes);
        });
    }
}

void register_collectives(CollectiveBench& cb, const std::vector<std::size_t>& sizes) {
    const std::pair<const char*, Collective> loops[] = {
        {"transport/nccl_broadcast_plain", Collective::broadcast},
        {"transport/nccl_allreduce_plain", Collective::allreduce},
    };
    for (const auto& [name, collective] : loops) {
        for (const std::size_t bytes : sizes) {
            register_sized(name, bytes, [&cb, bytes, collective = collective](benchmark::State& s) {
                collective_plain(s, cb, collective, bytes);
            });
        }
    }
}
#endif

// Runs what was registered; every rank ends with the same code.
int run_registered(MpiSession& session) {
    run_on_ranks(session);
    int failed = any_failed() ? 1 : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (failed != 0) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr,
                         "bench_transport: a benchmark failed its check (see ERROR above)\n");
        }
        return static_cast<int>(ExitCode::verification);
    }
    return 0;
}

#if GPURELAY_HAVE_CUDA
// A fresh NCCL id from rank 0, on every rank. Collective: every rank calls it, or none.
ncclUniqueId world_nccl_id(const MpiSession& session) {
    ncclUniqueId id = session.world_rank() == 0 ? PlainNcclComm::new_id() : ncclUniqueId{};
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    return id;
}

// The plain collectives over the world communicator. Collective, as world_nccl_id.
std::unique_ptr<CollectiveBench> make_collective_bench(const MpiSession& session, Device& device,
                                                       std::size_t max_bytes) {
    return std::make_unique<CollectiveBench>(session.world_size(), session.world_rank(), device,
                                             max_bytes, world_nccl_id(session));
}
#endif

// One rank: only the plain NCCL collective loops (a one-rank communicator: both are copies on
// its GPU); without a GPU there is nothing to time.
int run_one_rank([[maybe_unused]] MpiSession& session, [[maybe_unused]] bool on_gpu,
                 [[maybe_unused]] int ordinal, [[maybe_unused]] std::size_t max_bytes,
                 [[maybe_unused]] const std::vector<std::size_t>& sizes) {
#if GPURELAY_HAVE_CUDA
    if (on_gpu) {
        const auto device = make_cuda_device(ordinal);
        benchmark::AddCustomContext("device", device->info().name);
        const auto collectives = make_collective_bench(session, *device, max_bytes);
        register_collectives(*collectives, sizes);
        return run_registered(session);
    }
#endif
    std::fprintf(stderr,
                 "bench_transport: %s; one rank runs only the NCCL collective loops, nothing to "
                 "time\n",
                 cuda_built() ? "no GPU found" : "built without CUDA");
    return 0;
}

int run(MpiSession& session, int argc, char** argv) {
    if (!initialize_on_ranks(session, argc, argv)) return static_cast<int>(ExitCode::usage);
    if (session.world_size() > 2) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr,
                         "bench_transport: runs on 2 ranks (mpirun -np 2), or on 1 for the NCCL "
                         "collective loops alone, got %d\n",
                         session.world_size());
        }
        return static_cast<int>(ExitCode::usage);
    }
    const std::size_t max_bytes = max_bytes_from_env();
    const auto sizes = bench_sizes(max_bytes);

    // Every rank must agree on the device kind, or their benchmark lists would differ.
    const int gpus = cuda_device_count();
    int all_have_gpu = gpus > 0 ? 1 : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all_have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    const int ordinal = gpus > 0 ? session.local_rank() % gpus : -1;

    add_provenance_context();
    benchmark::AddCustomContext("max_bytes", std::to_string(max_bytes));
    benchmark::AddCustomContext("mpi", mpi_version_string());
    if (session.world_size() == 1) {
        return run_one_rank(session, all_have_gpu == 1, ordinal, max_bytes, sizes);
    }
    TransportBench tb(session.world_rank(), all_have_gpu == 1, ordinal, max_bytes);
    benchmark::AddCustomContext("device", tb.device->info().name);
    benchmark::AddCustomContext("transport", "mpi (host-staged)");
    benchmark::AddCustomContext(
        "ipc", tb.sized(TransportBench::Kind::ipc, sizes.front(), kIpcSlots).name());
    register_all(tb, sizes);
    const bool distinct = tb.on_gpu && on_distinct_gpus(session, *tb.device);
    benchmark::AddCustomContext("distinct_gpus", distinct ? "true" : "false");
#if GPURELAY_HAVE_CUDA
    // Collective: both ranks make them, or neither. NCCL needs a GPU per rank.
    std::unique_ptr<PlainNcclComm> nccl;
    std::unique_ptr<CollectiveBench> collectives;
    if (distinct) {
        nccl = std::make_unique<PlainNcclComm>(session.world_size(), session.world_rank(),
                                               world_nccl_id(session));
        register_nccl(tb, *nccl, sizes);
        collectives = make_collective_bench(session, *tb.device, max_bytes);
        register_collectives(*collectives, sizes);
    }
#endif
    return run_registered(session);
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_transport", argc, argv, gpurelay::bench::run);
}
