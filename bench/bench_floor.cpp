// The floor of a small step: its least work queued with plain CUDA and NCCL calls, so that it
// times the GPU, the driver and NCCL, not gpurelay: launch A; ncclSend and ncclRecv in one group;
// an event recorded on the receiving stream, waited on by the compute stream; launch B (counting
// wrong values of x). Queued eagerly, as one CUDA graph per step, and as K steps per graph. One
// rank sends to itself on gpurelay's -np 1 streams; two ranks on two GPUs split it as a pair does.
// An iteration is kBatch steps on the host clock, from before the first is queued until every
// stream (the slower rank's) is idle, over kBatch: the period, as gpurelay times its steps. Every
// step moves A's values of one fixed step, so overlapping steps cannot make B count a stale value.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.hpp"
#include "kernels/kernels.hpp"
#include "mpi/session.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include "bench/plain_nccl_comm.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay::bench {
namespace {

#if defined(GPURELAY_HAVE_CUDA)

constexpr std::uint64_t kStep = 5;
constexpr std::uint32_t kSeed = 20240611;
constexpr float kAlpha = 2.0f;
// Steps per timed iteration: a multiple of every K, making the first launch and the drain small.
constexpr int kBatch = 64;
constexpr int kStepsPerGraph[] = {0, 1, 4, 16};  // 0: eager
// Small steps are what the floor is for; larger ones are bound by the kernels and the copy.
constexpr std::size_t kFloorMaxBytes = std::size_t{1} << 20;
// Fixed, so that both ranks of a pair run the same iterations (about 0.1-1 s per benchmark).
constexpr benchmark::IterationCount kIterations = 200;

// One rank's half (or, alone, both halves) of the minimal step.
struct FloorRank {
    FloorRank(int world_size, int world_rank, int gpu_ordinal)
        : producer(world_rank == 0),
          consumer(world_size == 1 || world_rank == 1),
          peer(world_size == 1 ? 0 : 1 - world_rank),
          device(make_cuda_device(gpu_ordinal)),
          x_send(device->allocate(kFloorMaxBytes)),
          x_recv(device->allocate(kFloorMaxBytes)),
          y(device->allocate(kFloorMaxBytes)),
          wrong(*device) {
        if (producer) {
            producer_stream = device->make_stream(false, "floor A");
            streams.push_back(producer_stream.get());
        }
        if (consumer) {
            comm_stream = device->make_stream(true, "floor comm");
            compute_stream = device->make_stream(false, "floor B");
            streams.insert(streams.end(), {comm_stream.get(), compute_stream.get()});
            recv_done = device->make_event(EventUse::ordering);
        }
    }

    // The step, queued eagerly or into a capture alike.
    void queue_step(std::size_t bytes) {
        if (producer)
            launch_a(Span<float>(x_send.as<float>().data(), bytes / 4), kStep, kSeed,
                     *producer_stream);
        NCCL_CHECK(ncclGroupStart());
        if (producer) {
            NCCL_CHECK(ncclSend(x_send.data(), bytes, ncclChar, peer, nccl->get(),
                                cuda_handle(*producer_stream)));
        }
        if (consumer) {
            NCCL_CHECK(ncclRecv(x_recv.data(), bytes, ncclChar, peer, nccl->get(),
                                cuda_handle(*comm_stream)));
        }
        NCCL_CHECK(ncclGroupEnd());
        if (consumer) {
            recv_done->record(*comm_stream);
            compute_stream->wait(*recv_done);
            launch_b(Span<const float>(x_recv.as<float>().data(), bytes / 4),
                     Span<float>(y.as<float>().data(), bytes / 4), kAlpha, kStep, kSeed,
                     wrong.counter(), *compute_stream);
        }
    }

    // `steps` steps as one graph over all of this rank's streams (the others joined to the first).
    std::unique_ptr<Graph> capture(std::size_t bytes, int steps) {
        const std::vector<Stream*> joined(streams.begin() + 1, streams.end());
        const auto capture = device->begin_capture(*streams.front(), joined);
        for (int s = 0; s < steps; ++s) queue_step(bytes);
        return capture->finish();
    }

    void synchronize() {
        for (auto* stream : streams) stream->synchronize();
    }

    bool producer, consumer;
    int peer;
    std::unique_ptr<Device> device;
    Buffer x_send, x_recv, y;
    WrongCount wrong;
    // After the buffers: destroyed first, so no queued work outlives what it uses.
    std::unique_ptr<Stream> producer_stream, comm_stream, compute_stream;
    std::vector<Stream*> streams;  // the first is where a graph is captured and launched
    std::unique_ptr<Event> recv_done;
    std::unique_ptr<PlainNcclComm> nccl;
};

// Times `queue` (`steps_per_call` steps a call) as the top says, after one untimed call.
template <typename Queue>
void time_steps(benchmark::State& state, FloorRank& rank, std::size_t bytes, int steps_per_call,
                Queue&& queue) {
    if (rank.consumer) {
        // NaN bytes where x lands: a step whose transfer never happened is counted wrong.
        rank.device->fill_async(rank.x_recv.data(), 0xff, bytes, *rank.compute_stream);
        rank.wrong.reset(*rank.compute_stream);
    }
    rank.synchronize();
    barrier();
    queue();
    rank.synchronize();
    double queue_s = 0.0;  // the host's time inside `queue`, over every iteration
    for (auto _ : state) {
        barrier();
        const auto begin = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch / steps_per_call; ++i) {
            const auto queue_begin = std::chrono::steady_clock::now();
            queue();
            queue_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - queue_begin)
                           .count();
        }
        rank.synchronize();
        state.SetIterationTime(slowest_since(begin) / kBatch);
    }
    const auto wrong = summed(rank.consumer ? rank.wrong.read(*rank.compute_stream) : 0);
    if (wrong != 0) fail(state, "B counted " + std::to_string(wrong) + " wrong values of x");
    state.SetBytesProcessed(per_run(state, bytes) * kBatch);
    state.counters["steps_per_iteration"] = kBatch;
    state.counters["steps_per_graph"] = steps_per_call;
    // What queueing a step costs the host: above the period, the host is what paces the steps.
    state.counters["host_queue_us"] =
        1e6 * queue_s / static_cast<double>(state.iterations() * kBatch);
}

void floor_steps(benchmark::State& state, FloorRank& rank, std::size_t bytes, int k) {
    if (k == 0) return time_steps(state, rank, bytes, 1, [&] { rank.queue_step(bytes); });
    const auto graph = rank.capture(bytes, k);
    time_steps(state, rank, bytes, k, [&] { graph->launch(*rank.streams.front()); });
}

void register_floor(FloorRank& rank, const std::string& prefix, std::size_t max_bytes) {
    for (const std::size_t bytes : bench_sizes(std::min(max_bytes, kFloorMaxBytes))) {
        for (const int k : kStepsPerGraph) {
            register_timed(
                prefix + (k == 0 ? "/eager" : "/graph_k" + std::to_string(k)), bytes, kIterations,
                [&rank, bytes, k](benchmark::State& state) { floor_steps(state, rank, bytes, k); });
        }
    }
}

#endif  // GPURELAY_HAVE_CUDA

int run(MpiSession& session) {
    if (session.world_size() > 2) {
        say(session,
            "runs on 1 or 2 ranks (mpirun -np 1|2), got " + std::to_string(session.world_size()));
        return static_cast<int>(ExitCode::usage);
    }
    // Read (and a bad value refused) on every build; only the CUDA build times sizes.
    [[maybe_unused]] const std::size_t max_bytes = max_bytes_from_env();
    if (!gpu_on_every_rank()) {
        say(session, std::string(no_gpu()) + "; the floor is a GPU figure, nothing to time");
        return 0;
    }
#if defined(GPURELAY_HAVE_CUDA)
    // Before the communicator is made: NCCL reads it then (gpurelay sets the same).
    setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 0);
    FloorRank rank(session.world_size(), session.world_rank(),
                   session.local_rank() % cuda_device_count());
    if (session.world_size() == 2 && !on_distinct_gpus(session, *rank.device)) {
        say(session,
            "two ranks need two GPUs (NCCL refuses two ranks on one); run -np 1 for the "
            "one-GPU floor");
        return static_cast<int>(ExitCode::usage);
    }
    rank.nccl = std::make_unique<PlainNcclComm>(session.world_size(), session.world_rank());
    add_provenance_context();
    benchmark::AddCustomContext("device", rank.device->info().name);
    benchmark::AddCustomContext("ranks", std::to_string(session.world_size()));
    benchmark::AddCustomContext("nccl_graph_mixing_support",
                                std::getenv("NCCL_GRAPH_MIXING_SUPPORT"));
    benchmark::AddCustomContext("steps_per_iteration", std::to_string(kBatch));
    register_floor(rank, "floor/np" + std::to_string(session.world_size()), max_bytes);
    return run_on_ranks(session, "a benchmark failed its check");
#else
    return 0;
#endif
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_floor", argc, argv, gpurelay::bench::run);
}
