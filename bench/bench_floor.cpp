// The floor of a small step: the least work a gpurelay step is made of, queued with plain CUDA
// and NCCL calls, so that what it times is the GPU, the driver and NCCL, not gpurelay:
//   launch A; ncclSend and ncclRecv in one group; one ordering event recorded on the receiving
//   stream and waited on by the compute stream; launch B (which counts wrong values of x).
// Queued three ways: eager (every call, every step), one CUDA graph per step, and K steps per
// graph. One rank sends to itself, on gpurelay's -np 1 streams (A and the send on the producer
// stream, the receive on a comm stream, B on a compute stream); two ranks on two GPUs split the
// step as a pair does (rank 0: A and the send; rank 1: the receive, the wait and B).
//
//   mpirun -np 1 bench_floor --benchmark_out=floor.json --benchmark_out_format=json
//
// An iteration queues kBatch steps back to back and times them on the host clock, from before
// the first is queued until every stream is idle (with two ranks, the slower rank's), over
// kBatch: the step's period, timed the way gpurelay times its steps (wall time over steps), so
// a host that cannot queue faster than the GPU runs shows. Every step moves A's values of one
// fixed step, so steps that overlap cannot make B count a stale value wrong. NCCL's graph
// mixing is off (NCCL_GRAPH_MIXING_SUPPORT=0 unless the environment sets it), as in gpurelay.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.hpp"
#include "kernels/kernels.hpp"
#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include <cuda_runtime.h>

#include "bench/plain_nccl_comm.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay::bench {
namespace {

#if defined(GPURELAY_HAVE_CUDA)

constexpr std::uint64_t kStep = 5;
constexpr std::uint32_t kSeed = 20240611;
constexpr float kAlpha = 2.0f;
// Steps per timed iteration: a multiple of every K, and enough that the first launch's latency
// and the last step's drain are a small share of the batch.
constexpr int kBatch = 64;
constexpr int kStepsPerGraph[] = {1, 4, 16};
// Small steps are what the floor is for; larger ones are bound by the kernels and the copy.
constexpr std::size_t kFloorMaxBytes = std::size_t{1} << 20;
// Fixed, so that both ranks of a pair run the same iterations (about 0.1-1 s per benchmark).
constexpr benchmark::IterationCount kIterations = 200;

// An executable CUDA graph, destroyed with its owner.
class ExecGraph {
  public:
    explicit ExecGraph(cudaGraph_t graph) {
        const cudaError_t status = cudaGraphInstantiate(&exec_, graph, 0);
        cudaGraphDestroy(graph);
        CUDA_CHECK(status);
    }
    ~ExecGraph() {
        if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    }
    ExecGraph(const ExecGraph&) = delete;
    ExecGraph& operator=(const ExecGraph&) = delete;
    void launch(Stream& stream) { CUDA_CHECK(cudaGraphLaunch(exec_, cuda_handle(stream))); }

  private:
    cudaGraphExec_t exec_ = nullptr;
};

// Where a graph's kernels read the step from: the value itself (none); a device word that the
// graph's first node copies, before the step (copied_first: what gpurelay's graphs did first), or
// that a node on a branch of its own copies beside the step (copied_beside: there it stands for
// the next graph's word); the pinned host word itself, which the host writes before the launch
// (mapped_host: no copy node at all); or a device word that no node of the graph writes (device:
// one a graph of another ring position updates once a cycle, as gpurelay's do now).
enum class StepWord { none, copied_first, copied_beside, mapped_host, device };

// What a graph step carries beyond the minimal one: where its step comes from, and whether each
// step records an end event node (gpurelay's end event, which the host reads).
struct GraphExtras {
    StepWord word = StepWord::none;
    bool end_event = false;
};

// What a gpurelay eager step does beyond the minimal one, added one at a time to measure what
// each costs: the slot-reuse wait (the comm stream waits for B of step s - depth before the
// receive; B's stream records that event), then also the step's end event (a timing event,
// recorded after B), then also retiring each step from a ring of depth + 2 (the host waits
// for the end event of step s - depth - 1 before queueing step s, and reads its period).
// grouped_retire: the reuse wait, and an end event only on every kGroup-th step, which the host
// reads back once a group (the group's steps share its period).
enum class EagerExtras { none, reuse_wait, reuse_wait_end_event, ring_retire, grouped_retire };
constexpr std::size_t kFloorDepth = 2;
constexpr std::size_t kFloorRing = kFloorDepth + 2;
// Steps that share one end event in the grouped variants, and the ring of group end events.
constexpr std::size_t kGroup = 4;
constexpr std::size_t kGroupRing = 4;

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
          counter(device->allocate(sizeof(Counter))),
          counter_host(device->allocate_host(sizeof(Counter))),
          word_host(device->allocate_host(sizeof(std::uint64_t))),
          word_device(device->allocate(sizeof(std::uint64_t))),
          next_word_device(device->allocate(sizeof(std::uint64_t))) {
        *word_host.as<std::uint64_t>().data() = kStep;
        CUDA_CHECK(cudaEventCreate(&end_event));
        for (auto& event : group_end) CUDA_CHECK(cudaEventCreate(&event));
        if (producer) {
            producer_stream = device->make_stream(false, "floor A");
            streams.push_back(producer_stream.get());
        }
        if (consumer) {
            comm_stream = device->make_stream(true, "floor comm");
            compute_stream = device->make_stream(false, "floor B");
            streams.push_back(comm_stream.get());
            streams.push_back(compute_stream.get());
            recv_done = device->make_event(EventUse::ordering);
            for (std::size_t k = 0; k < kFloorDepth; ++k) {
                x_free.push_back(device->make_event(EventUse::ordering));
            }
        }
        for (std::size_t r = 0; r < kFloorRing; ++r) {
            step_end.push_back(device->make_event(EventUse::timing));
        }
        fork = device->make_event(EventUse::ordering);
        join = device->make_event(EventUse::ordering);
        word_stream = device->make_stream(false, "floor step word");
    }

    // The step, queued eagerly or into a capture alike; `step` is the value, or (in a graph
    // that copies it first, as gpurelay's do) the device word the kernels read it from.
    void queue_step(std::size_t bytes, StepArg step = StepArg(kStep),
                    EagerExtras extras = EagerExtras::none) {
        const std::size_t k = queued % kFloorDepth;
        const std::size_t r = queued % kFloorRing;
        const bool reuse = extras != EagerExtras::none;
        const bool end =
            extras == EagerExtras::reuse_wait_end_event || extras == EagerExtras::ring_retire;
        const bool grouped = extras == EagerExtras::grouped_retire;
        if (grouped && queued % kGroup == 0) retire_group();
        if (extras == EagerExtras::ring_retire && queued >= kFloorRing) {
            // gpurelay's retire: the end event of the step R - 1 back, and its period.
            step_end[(queued + 1) % kFloorRing]->synchronize();
            period_ms += step_end[(queued + 1) % kFloorRing]->elapsed_ms_since(
                *step_end[queued % kFloorRing]);
        }
        ++queued;
        if (producer)
            launch_a(Span<float>(x_send.as<float>().data(), bytes / 4), step, kSeed,
                     *producer_stream);
        NCCL_CHECK(ncclGroupStart());
        if (producer) {
            NCCL_CHECK(ncclSend(x_send.data(), bytes, ncclChar, peer, nccl->get(),
                                cuda_handle(*producer_stream)));
        }
        if (consumer) {
            if (reuse) comm_stream->wait(*x_free[k]);
            NCCL_CHECK(ncclRecv(x_recv.data(), bytes, ncclChar, peer, nccl->get(),
                                cuda_handle(*comm_stream)));
        }
        NCCL_CHECK(ncclGroupEnd());
        if (consumer) {
            recv_done->record(*comm_stream);
            compute_stream->wait(*recv_done);
            launch_b(Span<const float>(x_recv.as<float>().data(), bytes / 4),
                     Span<float>(y.as<float>().data(), bytes / 4), kAlpha, step, kSeed,
                     counter.as<Counter>().data(), *compute_stream);
            if (reuse) x_free[k]->record(*compute_stream);
        }
        if (end) step_end[r]->record(*streams.back());
        if (grouped && queued % kGroup == 0) {
            CUDA_CHECK(cudaEventRecord(group_end[(queued / kGroup - 1) % kGroupRing],
                                       cuda_handle(*streams.back())));
        }
    }

    // At the start of group g (g = queued / kGroup): the end of group g - 2 and its period.
    // Group j's last step records group_end[j % kGroupRing], so group g records again the end
    // of group g - 4, not one still to be read.
    void retire_group() {
        const std::size_t g = queued / kGroup;
        if (g < 3) return;
        cudaEvent_t done = group_end[(g - 2) % kGroupRing];
        CUDA_CHECK(cudaEventSynchronize(done));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, group_end[(g - 3) % kGroupRing], done));
        period_ms += ms;
    }

    // `steps` steps as one graph over all of this rank's streams: the others fork from the
    // first at the start and join it at the end (a record and a wait inside a capture are an
    // edge of the graph, not an event node).
    // `extras` adds what a gpurelay graph has beyond the minimal step, to measure its cost: where
    // the kernels read the step (GraphExtras), and an event record node at the end of each step.
    // `end_node_event` is the event that node records (the grouped variant's ring names its own;
    // else end_event).
    std::unique_ptr<ExecGraph> capture(std::size_t bytes, int steps, GraphExtras extras,
                                       cudaEvent_t end_node_event = nullptr) {
        Stream& origin = *streams.front();
        const StepWord word = extras.word;
        if (word == StepWord::copied_beside || word == StepWord::device) {
            // The word the kernels read, as the graph before would have left it.
            device->copy_async(word_device.data(), word_host.data(), sizeof(std::uint64_t), origin);
            origin.synchronize();
        }
        CUDA_CHECK(cudaStreamBeginCapture(cuda_handle(origin), cudaStreamCaptureModeThreadLocal));
        if (word == StepWord::copied_first)
            device->copy_async(word_device.data(), word_host.data(), sizeof(std::uint64_t), origin);
        const StepArg step = word == StepWord::none ? StepArg(kStep)
                             : word == StepWord::mapped_host
                                 ? StepArg(word_host.as<std::uint64_t>().data())
                                 : StepArg(word_device.as<std::uint64_t>().data());
        fork->record(origin);
        for (std::size_t i = 1; i < streams.size(); ++i) streams[i]->wait(*fork);
        if (word == StepWord::copied_beside) {
            // Into a word no kernel of this graph reads (it stands for the next graph's).
            word_stream->wait(*fork);
            device->copy_async(next_word_device.data(), word_host.data(), sizeof(std::uint64_t),
                               *word_stream);
            join->record(*word_stream);
            origin.wait(*join);
        }
        for (int s = 0; s < steps; ++s) {
            queue_step(bytes, step);
            if (extras.end_event) {
                CUDA_CHECK(cudaEventRecordWithFlags(end_node_event ? end_node_event : end_event,
                                                    cuda_handle(*streams.back()),
                                                    cudaEventRecordExternal));
            }
        }
        for (std::size_t i = 1; i < streams.size(); ++i) {
            join->record(*streams[i]);
            origin.wait(*join);
        }
        cudaGraph_t graph = nullptr;
        CUDA_CHECK(cudaStreamEndCapture(cuda_handle(origin), &graph));
        return std::make_unique<ExecGraph>(graph);
    }

    void synchronize() {
        for (auto* stream : streams) stream->synchronize();
    }

    bool producer, consumer;
    int peer;
    std::unique_ptr<Device> device;
    Buffer x_send, x_recv, y, counter, counter_host, word_host, word_device, next_word_device;
    cudaEvent_t end_event = nullptr;         // a timing event, as gpurelay's end event
    cudaEvent_t group_end[kGroupRing] = {};  // the grouped variants' ring of group ends
    ~FloorRank() {
        if (end_event != nullptr) cudaEventDestroy(end_event);
        for (auto* event : group_end) {
            if (event != nullptr) cudaEventDestroy(event);
        }
    }
    FloorRank(const FloorRank&) = delete;
    FloorRank& operator=(const FloorRank&) = delete;
    // After the buffers: destroyed first, so no queued work outlives what it uses.
    std::unique_ptr<Stream> producer_stream, comm_stream, compute_stream, word_stream;
    std::vector<Stream*> streams;  // the first is where a graph is captured and launched
    std::unique_ptr<Event> recv_done, fork, join;
    std::vector<std::unique_ptr<Event>> x_free, step_end;  // the eager extras'
    std::size_t queued = 0;                                // eager steps queued, for the ring
    double period_ms = 0.0;                                // the periods ring_retire read
    std::unique_ptr<PlainNcclComm> nccl;
};

void barrier() { MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

// Times `queue` (which queues `steps_per_call` steps) per iteration as described at the top,
// after one untimed call; then checks what B counted, on every rank alike.
template <typename Queue>
void time_steps(benchmark::State& state, FloorRank& rank, std::size_t bytes, int steps_per_call,
                Queue&& queue) {
    if (rank.consumer) {
        // NaN bytes where x lands: a step whose transfer never happened is counted wrong.
        rank.device->fill_async(rank.x_recv.data(), 0xff, bytes, *rank.compute_stream);
        rank.device->fill_async(rank.counter.data(), 0, sizeof(Counter), *rank.compute_stream);
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
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        state.SetIterationTime(elapsed / kBatch);
    }
    Counter wrong = 0;
    if (rank.consumer) {
        rank.device->copy_async(rank.counter_host.data(), rank.counter.data(), sizeof(Counter),
                                *rank.compute_stream);
        rank.compute_stream->synchronize();
        wrong = *rank.counter_host.as<Counter>().data();
    }
    MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (wrong != 0) fail(state, "B counted " + std::to_string(wrong) + " wrong values of x");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kBatch *
                            static_cast<std::int64_t>(bytes));
    state.counters["steps_per_iteration"] = kBatch;
    state.counters["steps_per_graph"] = steps_per_call;
    // What queueing a step costs the host (with a ring, its waits too): above the period, the
    // host is what paces the steps.
    state.counters["host_queue_us"] =
        1e6 * queue_s / static_cast<double>(state.iterations() * kBatch);
}

void floor_eager(benchmark::State& state, FloorRank& rank, std::size_t bytes,
                 EagerExtras extras = EagerExtras::none) {
    rank.queued = 0;  // the ring starts empty: its first R - 1 steps retire nothing
    time_steps(state, rank, bytes, 1, [&] { rank.queue_step(bytes, StepArg(kStep), extras); });
}

void floor_graph(benchmark::State& state, FloorRank& rank, std::size_t bytes, int steps,
                 GraphExtras extras = {}) {
    const auto graph = rank.capture(bytes, steps, extras);
    time_steps(state, rank, bytes, steps, [&] { graph->launch(*rank.streams.front()); });
}

// One graph a step, the step word mapped, and only every kGroup-th launch one whose graph records
// an end event (of kGroupRing, one graph each), read back at the start of each group as in the
// eager grouped variant.
// `word`: where the kernels read the step (mapped_word or device_word; the ending graphs add the
// end event).
void floor_graph_grouped(benchmark::State& state, FloorRank& rank, std::size_t bytes,
                         StepWord word) {
    const auto silent = rank.capture(bytes, 1, {word, false});
    std::vector<std::unique_ptr<ExecGraph>> ending;
    for (auto* event : rank.group_end) {
        ending.push_back(rank.capture(bytes, 1, {word, true}, event));
    }
    rank.queued = 0;
    time_steps(state, rank, bytes, 1, [&] {
        if (rank.queued % kGroup == 0) rank.retire_group();
        ++rank.queued;
        const bool ends = rank.queued % kGroup == 0;
        (ends ? *ending[(rank.queued / kGroup - 1) % kGroupRing] : *silent)
            .launch(*rank.streams.front());
    });
}

void register_floor(FloorRank& rank, const std::string& prefix, std::size_t max_bytes) {
    const auto add = [](const std::string& name, std::size_t bytes, auto body) {
        benchmark::RegisterBenchmark(name.c_str(), body)
            ->Arg(static_cast<std::int64_t>(bytes))
            ->Iterations(kIterations)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    };
    for (const std::size_t bytes : bench_sizes(std::min(max_bytes, kFloorMaxBytes))) {
        add(prefix + "/eager", bytes,
            [&rank, bytes](benchmark::State& state) { floor_eager(state, rank, bytes); });
        for (const int k : kStepsPerGraph) {
            add(prefix + "/graph_k" + std::to_string(k), bytes,
                [&rank, bytes, k](benchmark::State& state) { floor_graph(state, rank, bytes, k); });
        }
        if (bytes != kMinBytes) continue;
        // Not floors: the minimal eager and graph steps plus what gpurelay's add, one at a time.
        const std::pair<const char*, EagerExtras> eager_extras[] = {
            {"/eager_plus_reuse_wait", EagerExtras::reuse_wait},
            {"/eager_plus_reuse_wait_end_event", EagerExtras::reuse_wait_end_event},
            {"/eager_plus_reuse_wait_end_event_ring", EagerExtras::ring_retire},
            {"/eager_plus_reuse_wait_grouped_end4", EagerExtras::grouped_retire}};
        for (const auto& [name, extra] : eager_extras) {
            add(prefix + name, bytes, [&rank, bytes, extra = extra](benchmark::State& state) {
                floor_eager(state, rank, bytes, extra);
            });
        }
        const std::pair<const char*, GraphExtras> extras[] = {
            {"/graph_k1_plus_step_word", {StepWord::copied_first, false}},
            {"/graph_k1_plus_step_word_end_event", {StepWord::copied_first, true}},
            {"/graph_k1_plus_step_word_beside", {StepWord::copied_beside, false}},
            {"/graph_k1_plus_step_word_beside_end_event", {StepWord::copied_beside, true}},
            {"/graph_k1_plus_mapped_word", {StepWord::mapped_host, false}},
            {"/graph_k1_plus_mapped_word_end_event", {StepWord::mapped_host, true}},
            {"/graph_k1_plus_device_word", {StepWord::device, false}},
            {"/graph_k1_plus_device_word_end_event", {StepWord::device, true}}};
        for (const auto& [name, extra] : extras) {
            add(prefix + name, bytes, [&rank, bytes, extra = extra](benchmark::State& state) {
                floor_graph(state, rank, bytes, 1, extra);
            });
        }
        add(prefix + "/graph_k1_plus_mapped_word_grouped_end4", bytes,
            [&rank, bytes](benchmark::State& state) {
                floor_graph_grouped(state, rank, bytes, StepWord::mapped_host);
            });
        add(prefix + "/graph_k1_plus_device_word_grouped_end4", bytes,
            [&rank, bytes](benchmark::State& state) {
                floor_graph_grouped(state, rank, bytes, StepWord::device);
            });
    }
}

#endif  // GPURELAY_HAVE_CUDA

int run(MpiSession& session, int argc, char** argv) {
    if (!initialize_on_ranks(session, argc, argv)) return static_cast<int>(ExitCode::usage);
    if (session.world_size() > 2) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr, "bench_floor: runs on 1 or 2 ranks (mpirun -np 1|2), got %d\n",
                         session.world_size());
        }
        return static_cast<int>(ExitCode::usage);
    }
    // Read (and a bad value refused) on every build; only the CUDA build times sizes.
    [[maybe_unused]] const std::size_t max_bytes = max_bytes_from_env();
    int all_have_gpu = cuda_device_count() > 0 ? 1 : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all_have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (all_have_gpu == 0) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr, "bench_floor: %s; the floor is a GPU figure, nothing to time\n",
                         cuda_built() ? "no GPU found" : "built without CUDA");
        }
        return 0;
    }
#if defined(GPURELAY_HAVE_CUDA)
    // Before the communicator is made: NCCL reads it then (gpurelay sets the same).
    setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 0);
    FloorRank rank(session.world_size(), session.world_rank(),
                   session.local_rank() % cuda_device_count());
    if (session.world_size() == 2 && !on_distinct_gpus(session, *rank.device)) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr,
                         "bench_floor: two ranks need two GPUs (NCCL refuses two ranks on one); "
                         "run -np 1 for the one-GPU floor\n");
        }
        return static_cast<int>(ExitCode::usage);
    }
    ncclUniqueId id = session.world_rank() == 0 ? PlainNcclComm::new_id() : ncclUniqueId{};
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    rank.nccl = std::make_unique<PlainNcclComm>(session.world_size(), session.world_rank(), id);

    add_provenance_context();
    benchmark::AddCustomContext("device", rank.device->info().name);
    benchmark::AddCustomContext("ranks", std::to_string(session.world_size()));
    benchmark::AddCustomContext("nccl_graph_mixing_support",
                                std::getenv("NCCL_GRAPH_MIXING_SUPPORT"));
    benchmark::AddCustomContext("steps_per_iteration", std::to_string(kBatch));
    register_floor(rank, "floor/np" + std::to_string(session.world_size()), max_bytes);
    run_on_ranks(session);
    if (any_failed()) {
        if (session.world_rank() == 0) {
            std::fprintf(stderr, "bench_floor: a benchmark failed its check (see ERROR above)\n");
        }
        return static_cast<int>(ExitCode::verification);
    }
#endif
    return 0;
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_floor", argc, argv, gpurelay::bench::run);
}
