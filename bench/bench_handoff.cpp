// The hand-off floor: a pair of persistent kernels that only pass a count back and forth, N
// hand-offs in one launch, as MSCCL++'s semaphore ping-pong does (semaphore_perf_tests.cu),
// through the ipc transport's own flags of slot 0 (each side waits on its own memory and writes
// the other's) with a device-driven step's waits and signals (handoff_floor.hpp): a launch =
// "device" step of A and B is held against A + B + this. One rank runs both kernels on two
// streams of one GPU; two ranks one each, on one GPU under MPS (scripts/with-mps) or on two.
// An iteration is one launch of kWarm round trips and kRounds timed ones, stamped on the GPU's
// global timer by the side that starts them; us_per_handoff is their time over 2 x kRounds.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>

#include "bench/bench_support.hpp"
#include "mpi/error.hpp"
#include "mpi/pairing.hpp"
#include "mpi/session.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "transport/transport.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include "bench/handoff_floor.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay::bench {
namespace {

#if defined(GPURELAY_HAVE_CUDA)

// MSCCL++'s count: 1000 hand-offs a launch (500 round trips), after a few to warm up.
constexpr std::uint32_t kRounds = 500;
constexpr std::uint32_t kWarm = 5;
// Fixed, so that both ranks launch the same kernels.
constexpr benchmark::IterationCount kIterations = 50;
constexpr std::uint64_t kTimeoutNs = 10'000'000'000ull;

// This rank's side (or both, with one rank): the ipc transport of one slot, streams, the stamps.
struct FloorRank {
    PairPlacement placement;
    std::unique_ptr<Device> device;
    std::unique_ptr<Transport> transport;
    std::unique_ptr<Stream> starter, responder;
    Buffer results;  // pinned: the elapsed ns, then the failure word
};

std::uint64_t& elapsed_ns(FloorRank& rank) { return rank.results.as<std::uint64_t>()[0]; }
std::uint32_t& failed(FloorRank& rank) {
    return *reinterpret_cast<std::uint32_t*>(rank.results.as<std::uint64_t>().data() + 1);
}

// The producer's side starts: it signals arrived and waits on released; the consumer's side
// waits on arrived and signals released.
void launch_side(FloorRank& rank, bool starts, Stream& stream) {
    SlotFlags* home = rank.transport->slot_flags(starts ? Role::producer : Role::consumer);
    run_handoff_floor(
        {*home, home, kWarm, kRounds, starts, kTimeoutNs, &elapsed_ns(rank), &failed(rank)},
        cuda_handle(stream));
}

void floor_benchmark(benchmark::State& state, FloorRank& rank) {
    const bool producer = rank.placement.role != Role::consumer;
    const bool consumer = rank.placement.role != Role::producer;
    double timed_s = 0;
    for (auto _ : state) {
        barrier();
        if (consumer) launch_side(rank, false, *rank.responder);
        if (producer) launch_side(rank, true, *rank.starter);
        if (consumer) rank.responder->synchronize();
        if (producer) rank.starter->synchronize();
        double seconds = static_cast<double>(elapsed_ns(rank)) * 1e-9;
        // The starting side's stamps, on every rank, so both report the same time.
        MPI_CHECK(MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        state.SetIterationTime(seconds);
        timed_s += seconds;
    }
    if (summed(failed(rank)) != 0)
        fail(state, "a hand-off's wait ran out (10 s): the other side never answered");
    const double handoffs = 2.0 * kRounds * static_cast<double>(state.iterations());
    state.counters["handoffs_per_iteration"] = 2.0 * kRounds;
    state.counters["us_per_handoff"] = handoffs > 0 ? 1e6 * timed_s / handoffs : 0.0;
}

std::unique_ptr<FloorRank> open_floor(const MpiSession& session) {
    auto rank = std::make_unique<FloorRank>();
    rank->placement = place_pairs(session.world_rank(), session.world_size(), false);
    rank->device = make_cuda_device(session.local_rank() % cuda_device_count());
    TransportOptions options{4096, 4096, std::chrono::seconds(60)};
    options.slots = 1;
    options.produce_in_place = true;
    rank->transport = make_ipc_transport(MPI_COMM_WORLD, rank->placement, *rank->device, options);
    rank->starter = rank->device->make_stream(true, "hand-off starter");
    rank->responder = rank->device->make_stream(true, "hand-off responder");
    rank->results = rank->device->allocate_host(2 * sizeof(std::uint64_t));
    std::memset(rank->results.data(), 0, rank->results.bytes());
    return rank;
}

#endif

int run(MpiSession& session) {
    if (session.world_size() > 2) {
        say(session,
            "runs on 1 or 2 ranks (mpirun -np 1|2), got " + std::to_string(session.world_size()));
        return static_cast<int>(ExitCode::usage);
    }
    if (!gpu_on_every_rank()) {
        say(session,
            std::string(no_gpu()) + "; the hand-off floor is a GPU figure, nothing to time");
        return 0;
    }
#if defined(GPURELAY_HAVE_CUDA)
    const std::unique_ptr<FloorRank> rank = open_floor(session);
    add_provenance_context();
    benchmark::AddCustomContext("device", rank->device->info().name);
    benchmark::AddCustomContext("ranks", std::to_string(session.world_size()));
    // "one process", "same GPU, shared through MPS", "NVLink": what the hand-off crosses.
    benchmark::AddCustomContext("link", rank->transport->name());
    const std::string name = "handoff_floor/np" + std::to_string(session.world_size());
    benchmark::RegisterBenchmark(
        name.c_str(), [&rank](benchmark::State& state) { floor_benchmark(state, *rank); })
        ->Iterations(kIterations)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    return run_on_ranks(session, "a hand-off never came back", ExitCode::runtime);
#else
    return 0;
#endif
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_handoff", argc, argv, gpurelay::bench::run);
}
