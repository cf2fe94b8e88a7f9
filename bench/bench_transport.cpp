// Messages from rank 0 to rank 1: the host-staged MPI transport beside its ceilings on a GPU
// (pinned D2H and H2D copies, plain MPI between pinned buffers: a staged message is no faster
// than its slowest leg); on two distinct GPUs, plain ncclSend/ncclRecv, ncclBroadcast and
// ncclAllReduce loops (algbw and busbw as nccl-tests gives them); the ipc transport (CUDA IPC on
// a GPU, a shared-memory window on the CPU) beside a device-to-device copy in rank 0's process.
// One rank runs only the broadcast and all-reduce loops (copies on its GPU), or without a GPU
// says so and exits 0. A staged iteration lasts until rank 1's acknowledgement reaches rank 0; an
// NCCL or ipc iteration is a batch queued back to back, as nccl-tests times.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
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
// NCCL and ipc messages per timed batch: enough to hide the launch of the first and the host's
// wake-up after the last, as in a pipeline that keeps several messages in flight.
constexpr int kBatch = 64;
// The ipc transport's receive slots: two, as a pipeline of depth 2, so the release of one
// message's slot overlaps the copy of the next; and four, to see what more slack buys.
constexpr std::size_t kIpcSlots = 2;
constexpr std::size_t kIpcWideSlots = 4;

using Benchmarks = std::vector<std::pair<std::string, Body>>;

struct TransportBench {
    TransportBench(int rank_in, bool use_gpu, int gpu_ordinal, std::size_t max_bytes)
        : rank(rank_in),
          on_gpu(use_gpu),
          device(use_gpu ? make_cuda_device(gpu_ordinal) : make_host_device(kDefaultTimeout)),
          stream(device->make_stream(true, "bench comm")),
          start(device->make_event(EventUse::timing)),
          stop(device->make_event(EventUse::timing)),
          message(device->allocate(max_bytes)),
          wrong(*device),
          pair(place_pairs(rank_in, 2, false)) {
        if (on_gpu) pinned = device->allocate_host(max_bytes);
        if (rank == kSender) {
            // Real data: A's values, which the receiver checks after each benchmark.
            launch_a(message.as<float>(), kStep, kSeed, *stream);
            if (on_gpu) device->copy_async(pinned.data(), message.data(), max_bytes, *stream);
        } else {
            scratch = device->allocate(max_bytes);
        }
        stream->synchronize();
        if (rank == kSender && on_gpu) copy_target = device->allocate(max_bytes);
    }

    // A transport of `kind` for `bytes` through `slots` slots, made at first need (collective: both
    // ranks run the benchmarks in one order), its producer's slots holding A's values.
    enum class Kind { staged, ipc, ipc_in_place };
    Transport& sized(Kind kind, std::size_t bytes, std::size_t slots) {
        const auto key = std::make_tuple(static_cast<int>(kind), bytes, slots);
        auto found = transports.find(key);
        if (found != transports.end()) return *found->second;
        TransportOptions options{bytes, TransportOptions{}.chunk_bytes, kDefaultTimeout};
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

    int rank;
    bool on_gpu;
    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> start, stop;
    Buffer message;  // rank 0: what it sends; rank 1: where it lands
    Buffer scratch;  // rank 1: B's output while checking
    Buffer pinned;   // on a GPU: the host side of the ceiling copies and of plain MPI
    WrongCount wrong;
    Buffer copy_target;  // rank 0 on a GPU: where the device-to-device ceiling copies to
    PairPlacement pair;  // rank 0 produces, rank 1 consumes
    // Declared last: destroyed first, while the buffers their queued work used still exist.
    std::map<std::tuple<int, std::size_t, std::size_t>, std::unique_ptr<Transport>> transports;
};

// One message through `t`'s slot `k` as the pipeline queues it, the transport alone (no kernel
// reads it): rank 0 sends it; rank 1 receives and releases it, and gets where it landed.
const void* pass_slot(TransportBench& tb, Transport& t, std::size_t k) {
    if (tb.rank == kSender) {
        t.acquire(k, *tb.stream);
        t.publish(k, *tb.stream);
        return nullptr;
    }
    const void* landed = t.await(k, *tb.stream);
    t.release(k, *tb.stream);
    return landed;
}

void one_way(const TransportBench& tb, int from, void* data, int count, int tag) {
    if (tb.rank == from) {
        MPI_CHECK(MPI_Send(data, count, MPI_BYTE, 1 - from, tag, MPI_COMM_WORLD));
    } else {
        MPI_CHECK(MPI_Recv(data, count, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
}

// Rank 1's zero-byte acknowledgement that a message landed, which rank 0 waits for.
void acknowledge(const TransportBench& tb) { one_way(tb, kReceiver, nullptr, 0, kAckTag); }

// Rank 1 checks the last message (at `received`, else its message buffer); both learn the count.
void check_delivery(benchmark::State& state, TransportBench& tb, std::size_t bytes,
                    const void* received = nullptr) {
    std::uint64_t wrong = 0;
    if (tb.rank == kReceiver) {
        const auto* data = static_cast<const float*>(received ? received : tb.message.data());
        wrong = tb.wrong.count_b({data, bytes / 4}, {tb.scratch.as<float>().data(), bytes / 4},
                                 kStep, kSeed, *tb.stream);
    }
    if (const auto all = summed(wrong); all != 0) {
        fail(state, "rank 1 received " + std::to_string(all) + " wrong values");
    }
    state.SetBytesProcessed(per_run(state, bytes));
}

// Times `one` (a message finished on both ranks) per iteration after a warm-up, ranks together.
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

// Times batches of kBatch `queue_one`s: the slower rank's wall time from a barrier to `stream`'s
// end over kBatch, after one untimed (NCCL's first connects). Returns those seconds' sum.
template <typename QueueOne>
double time_batches(benchmark::State& state, Stream& stream, QueueOne&& queue_one) {
    barrier();
    queue_one();
    stream.synchronize();
    double total = 0.0;
    for (auto _ : state) {
        barrier();
        const auto begin = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i) queue_one();
        stream.synchronize();
        const double seconds = slowest_since(begin) / kBatch;
        state.SetIterationTime(seconds);
        total += seconds;
    }
    return total;
}

// The transport's receive slots start poisoned, so stale data cannot pass the check.
void transport_staged(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    Transport& staged = tb.sized(TransportBench::Kind::staged, bytes, 1);
    const void* landed = nullptr;
    time_messages(state, [&] {
        landed = pass_slot(tb, staged, 0);
        tb.stream->synchronize();
        acknowledge(tb);
    });
    check_delivery(state, tb, bytes, landed);
}

// Plain MPI between the ranks' pinned host buffers, no GPU: what the MPI library itself moves
// between two processes, the ceiling of the staged transport's middle leg.
void transport_mpi_pinned(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    const auto count = static_cast<int>(bytes);
    auto one = [&] {
        one_way(tb, kSender, tb.pinned.data(), count, 0);
        acknowledge(tb);
    };
    // Poisoned where the message lands, so an earlier benchmark's data cannot pass the check.
    if (tb.rank == kReceiver) std::memset(tb.pinned.data(), 0xff, bytes);
    time_messages(state, one);
    // Rank 1 moves what arrived onto its GPU, where the usual check reads it.
    if (tb.rank == kReceiver) {
        tb.device->copy_async(tb.message.data(), tb.pinned.data(), bytes, *tb.stream);
        tb.stream->synchronize();
    }
    check_delivery(state, tb, bytes);
}

// Message i through slot i % slots; the slots start poisoned, so a missing copy fails the check.
template <std::size_t slots>
void transport_ipc(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    Transport& ipc = tb.sized(TransportBench::Kind::ipc, bytes, slots);
    std::size_t next = 0;
    const void* landed = nullptr;
    time_batches(state, *tb.stream, [&] { landed = pass_slot(tb, ipc, next++ % slots); });
    check_delivery(state, tb, bytes, landed);
}

// A diagnosis, not a transport: rank 0 copies into rank 1's mapped slot back to back with no
// sequence words; against transport/ipc_gpu it shows what the per-message handshake costs.
void ipc_copy_only(benchmark::State& state, TransportBench& tb, std::size_t bytes) {
    Transport& ipc = tb.sized(TransportBench::Kind::ipc_in_place, bytes, 1);
    void* slot = tb.rank == kSender ? ipc.acquire(0, *tb.stream) : nullptr;
    time_batches(state, *tb.stream, [&] {
        if (tb.rank == kSender) tb.device->copy_async(slot, tb.message.data(), bytes, *tb.stream);
    });
    // One word says the copies are in; then rank 1 checks its slot.
    const void* landed = nullptr;
    if (tb.rank == kSender) ipc.publish(0, *tb.stream);
    if (tb.rank == kReceiver) landed = ipc.await(0, *tb.stream);
    tb.stream->synchronize();
    check_delivery(state, tb, bytes, landed);
    if (tb.rank == kReceiver) ipc.release(0, *tb.stream);
    tb.stream->synchronize();
}

// A ceiling on a GPU: rank 0 copies `src` to `dst` in its own process, `batch` copies an
// iteration between events; rank 1 only keeps in step.
void rank0_copy(benchmark::State& state, TransportBench& tb, Buffer& dst, const Buffer& src,
                int batch, std::size_t bytes) {
    barrier();
    if (tb.rank != kSender) {
        for (auto _ : state) state.SetIterationTime(0.0);
        barrier();
        return;
    }
    tb.device->copy_async(dst.data(), src.data(), bytes, *tb.stream);  // warm-up
    tb.stream->synchronize();
    for (auto _ : state) {
        tb.start->record(*tb.stream);
        for (int i = 0; i < batch; ++i) {
            tb.device->copy_async(dst.data(), src.data(), bytes, *tb.stream);
        }
        tb.stop->record(*tb.stream);
        tb.stop->synchronize();
        state.SetIterationTime(tb.stop->elapsed_ms_since(*tb.start) * 1e-3 / batch);
    }
    state.SetBytesProcessed(per_run(state, bytes));
    barrier();
}

Benchmarks transport_benchmarks(TransportBench& tb) {
    const std::string ipc = tb.on_gpu ? "transport/ipc_gpu" : "transport/ipc_host";
    Benchmarks list = {
        {tb.on_gpu ? "transport/mpi_staged_gpu" : "transport/mpi_staged_host",
         on(tb, transport_staged)},
        {ipc, on(tb, transport_ipc<kIpcSlots>)},
        {ipc + "_4slots", on(tb, transport_ipc<kIpcWideSlots>)},
        {ipc + "_copy_only", on(tb, ipc_copy_only)},
    };
    if (!tb.on_gpu) return list;
    const auto copy = [&tb](Buffer& dst, const Buffer& src, int batch) {
        return on(tb, rank0_copy, std::ref(dst), std::cref(src), batch);
    };
    list.emplace_back("gpu/copy_d2d", copy(tb.copy_target, tb.message, kBatch));
    list.emplace_back("transport/mpi_plain_pinned", on(tb, transport_mpi_pinned));
    list.emplace_back("gpu/copy_d2h", copy(tb.pinned, tb.message, 1));
    list.emplace_back("gpu/copy_h2d", copy(tb.message, tb.pinned, 1));
    return list;
}

#if GPURELAY_HAVE_CUDA
// A plain ncclSend (rank 0) / ncclRecv (rank 1) loop into a poisoned buffer (no stale pass).
void transport_nccl_plain(benchmark::State& state, TransportBench& tb, const PlainNcclComm& nccl,
                          std::size_t bytes) {
    if (tb.rank == kReceiver) {
        tb.device->fill_async(tb.message.data(), 0xff, bytes, *tb.stream);
        tb.stream->synchronize();
    }
    const cudaStream_t stream = cuda_handle(*tb.stream);
    time_batches(state, *tb.stream, [&] {
        if (tb.rank == kSender) {
            NCCL_CHECK(ncclSend(tb.message.data(), bytes, ncclChar, kReceiver, nccl.get(), stream));
        } else {
            NCCL_CHECK(ncclRecv(tb.message.data(), bytes, ncclChar, kSender, nccl.get(), stream));
        }
    });
    check_delivery(state, tb, bytes);
}

// Plain collectives over the world communicator, as nccl-tests runs them (out of place, root 0):
// every rank has its own GPU; with one rank both are copies on its GPU.
struct CollectiveBench {
    CollectiveBench(int size_in, int rank_in, Device& device_in, std::size_t max_bytes)
        : size(size_in),
          rank(rank_in),
          device(device_in),
          stream(device.make_stream(true, "bench collective")),
          send(device.allocate(max_bytes)),
          recv(device.allocate(max_bytes)),
          scratch(device.allocate(max_bytes)),
          wrong(device),
          nccl(size_in, rank_in) {}

    int size;
    int rank;
    Device& device;
    std::unique_ptr<Stream> stream;
    Buffer send;     // what this rank contributes (the root's tensor, or its all-reduce share)
    Buffer recv;     // where the collective's result lands
    Buffer scratch;  // B's output while checking
    WrongCount wrong;
    // Declared last: destroyed first, while the buffers its queued work used still exist.
    PlainNcclComm nccl;
};

// Checks the last result against A's formula (the root's tensor; the shares' sum, exact by
// construction); reports nccl-tests' algbw (bytes / time) and busbw (algbw x bus factor), in GB/s.
void collective_plain(benchmark::State& state, CollectiveBench& cb, Collective collective,
                      std::size_t bytes) {
    const std::size_t count = bytes / 4;
    const bool sum = collective == Collective::allreduce;
    launch_a(Span<float>{cb.send.as<float>().data(), count}, kStep, kSeed, *cb.stream,
             sum ? allreduce_share(cb.rank) : TensorForm{});
    cb.device.fill_async(cb.recv.data(), 0xff, bytes, *cb.stream);  // poison: no stale pass
    cb.stream->synchronize();
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
    const std::uint64_t wrong = summed(cb.wrong.count_b(
        {cb.recv.as<float>().data(), count}, {cb.scratch.as<float>().data(), count}, kStep, kSeed,
        *cb.stream, sum ? allreduce_sum(cb.size) : TensorForm{}));
    if (wrong != 0) {
        fail(state, std::to_string(wrong) + " wrong values over the ranks' results");
        return;
    }
    state.SetBytesProcessed(per_run(state, bytes));
    const double algbw =
        seconds > 0.0 ? static_cast<double>(per_run(state, bytes)) / seconds / 1e9 : 0.0;
    state.counters["algbw_gbps"] = algbw;
    state.counters["busbw_gbps"] = algbw * bus_factor(collective, cb.size);
    state.counters["ranks"] = cb.size;
}

void add_collectives(Benchmarks& list, CollectiveBench& cb) {
    for (const auto collective : {Collective::broadcast, Collective::allreduce}) {
        list.emplace_back(collective == Collective::broadcast ? "transport/nccl_broadcast_plain"
                                                              : "transport/nccl_allreduce_plain",
                          on(cb, collective_plain, collective));
    }
}
#endif

int run_all(const MpiSession& session, const Benchmarks& list,
            const std::vector<std::size_t>& sizes) {
    for (const auto& [name, body] : list) {
        for (const std::size_t bytes : sizes) {
            register_timed(name, bytes, iterations_for(bytes),
                           [body = body, bytes](benchmark::State& state) { body(state, bytes); });
        }
    }
    return run_on_ranks(session, "a benchmark failed its check");
}

int run(MpiSession& session) {
    if (session.world_size() > 2) {
        say(session,
            "runs on 2 ranks (mpirun -np 2), or on 1 for the NCCL collective loops alone, got " +
                std::to_string(session.world_size()));
        return static_cast<int>(ExitCode::usage);
    }
    const std::size_t max_bytes = max_bytes_from_env();
    const auto sizes = bench_sizes(max_bytes);
    const bool on_gpu = gpu_on_every_rank();
    add_provenance_context();
    benchmark::AddCustomContext("max_bytes", std::to_string(max_bytes));
    benchmark::AddCustomContext("mpi", mpi_version_string());
#if GPURELAY_HAVE_CUDA
    if (session.world_size() == 1 && on_gpu) {
        const auto device = make_cuda_device(session.local_rank() % cuda_device_count());
        benchmark::AddCustomContext("device", device->info().name);
        CollectiveBench collectives(1, 0, *device, max_bytes);
        Benchmarks list;
        add_collectives(list, collectives);
        return run_all(session, list, sizes);
    }
#endif
    if (session.world_size() == 1) {
        say(session, std::string(no_gpu()) +
                         "; one rank runs only the NCCL collective loops, nothing to time");
        return 0;
    }

    TransportBench tb(session.world_rank(), on_gpu,
                      on_gpu ? session.local_rank() % cuda_device_count() : -1, max_bytes);
    benchmark::AddCustomContext("device", tb.device->info().name);
    benchmark::AddCustomContext("transport", "mpi (host-staged)");
    benchmark::AddCustomContext(
        "ipc", tb.sized(TransportBench::Kind::ipc, sizes.front(), kIpcSlots).name());
    Benchmarks list = transport_benchmarks(tb);
    const bool distinct = tb.on_gpu && on_distinct_gpus(session, *tb.device);
    benchmark::AddCustomContext("distinct_gpus", distinct ? "true" : "false");
#if GPURELAY_HAVE_CUDA
    // Collective: both ranks make them, or neither. NCCL needs a GPU per rank.
    std::unique_ptr<PlainNcclComm> nccl;
    std::unique_ptr<CollectiveBench> collectives;
    if (distinct) {
        nccl = std::make_unique<PlainNcclComm>(session.world_size(), session.world_rank());
        list.emplace_back("transport/nccl_plain", on(tb, transport_nccl_plain, std::cref(*nccl)));
        collectives = std::make_unique<CollectiveBench>(session.world_size(), session.world_rank(),
                                                        *tb.device, max_bytes);
        add_collectives(list, *collectives);
    }
#endif
    return run_all(session, list, sizes);
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_transport", argc, argv, gpurelay::bench::run);
}
