// Plain MPI between host buffers in a line of ranks, against the same hops as pairs side by side:
// what MPI itself gives a relay's middle stage, receiving from one stage while sending to the
// next. With 2P ranks, line/mpi is ranks 0..P as a line (P hops, the others waiting); pairs/mpi
// the same hops as pairs (0, 1), (2, 3), ..., as --group-size 2. A message goes in 4 MiB pieces,
// all in flight; each rank sends on a host stream while its main thread receives. An iteration
// is the slowest rank's wall time from a barrier until every hop's message has arrived.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "transport/transport.hpp"

namespace gpurelay::bench {
namespace {

// gpurelay's `chunk` default.
constexpr std::size_t kPieceBytes = TransportOptions{}.chunk_bytes;

// A rank's part in one pattern: the rank it receives from and the one it sends to (-1: none).
struct Part {
    int from = -1;
    int to = -1;
};

Part line_part(int rank, int hops) {
    return {rank > 0 && rank <= hops ? rank - 1 : -1, rank < hops ? rank + 1 : -1};
}

Part pairs_part(int rank) { return rank % 2 == 1 ? Part{rank - 1, -1} : Part{-1, rank + 1}; }

// The byte a rank's messages carry, so a receiver can tell whose data it holds.
std::byte sender_mark(int rank) { return static_cast<std::byte>(rank + 1); }

class LineBench {
  public:
    LineBench(int rank, std::size_t max_bytes)
        : send_(max_bytes, sender_mark(rank)), receive_(max_bytes) {}

    // The timed loop of one benchmark: a warm-up message (the first between two ranks connects
    // them), then one message on every hop per iteration, each started from a barrier.
    void run(benchmark::State& state, Part part, std::size_t bytes) {
        std::fill_n(receive_.begin(), bytes, std::byte{0});
        barrier();
        one_message(part, bytes);
        for (auto _ : state) {
            barrier();
            const auto begin = std::chrono::steady_clock::now();
            one_message(part, bytes);
            state.SetIterationTime(slowest_since(begin));
        }
        check(state, part, bytes);
        state.SetBytesProcessed(per_run(state, bytes));
    }

  private:
    static void transfer(std::byte* data, std::size_t bytes, int peer, bool sending) {
        transfer_pieces(data, bytes, kPieceBytes, peer, sending, MPI_COMM_WORLD, wait_timeout());
    }

    void one_message(Part part, std::size_t bytes) {
        if (part.to >= 0) {
            sender_.enqueue([this, part, bytes] { transfer(send_.data(), bytes, part.to, true); });
        }
        if (part.from >= 0) transfer(receive_.data(), bytes, part.from, false);
        sender_.synchronize();
    }

    // Every receiver's buffer holds its sender's bytes (it was zeroed before the benchmark).
    void check(benchmark::State& state, Part part, std::size_t bytes) const {
        std::uint64_t wrong = 0;
        if (part.from >= 0) {
            wrong = std::count_if(receive_.begin(), receive_.begin() + bytes,
                                  [&](std::byte b) { return b != sender_mark(part.from); });
        }
        if (const auto all = summed(wrong); all != 0) {
            fail(state, std::to_string(all) + " bytes received wrong");
        }
    }

    std::vector<std::byte> send_;
    std::vector<std::byte> receive_;
    HostStream sender_{wait_timeout(), "bench send"};
};

void register_patterns(LineBench& bench, int rank, int hops, std::size_t bytes) {
    const struct {
        const char* name;
        Part part;
    } patterns[] = {{"line/mpi", line_part(rank, hops)}, {"pairs/mpi", pairs_part(rank)}};
    for (const auto& pattern : patterns) {
        register_timed(pattern.name, bytes, iterations_for(bytes),
                       [&bench, part = pattern.part, bytes](benchmark::State& s) {
                           bench.run(s, part, bytes);
                       });
    }
}

int run(MpiSession& session) {
    const int ranks = session.world_size();
    if (ranks < 4 || ranks % 2 != 0) {
        say(session,
            "runs on an even number of ranks, at least 4 (a line of N stages against its "
            "N - 1 hops as pairs needs 2(N - 1)), got " +
                std::to_string(ranks));
        return static_cast<int>(ExitCode::usage);
    }
    const int hops = ranks / 2;
    const std::size_t max_bytes = max_bytes_from_env();
    LineBench bench(session.world_rank(), max_bytes);
    for (const std::size_t bytes : bench_sizes(max_bytes)) {
        register_patterns(bench, session.world_rank(), hops, bytes);
    }
    add_provenance_context();
    benchmark::AddCustomContext("stages", std::to_string(hops + 1));
    benchmark::AddCustomContext("pairs", std::to_string(hops));
    benchmark::AddCustomContext("piece_bytes", std::to_string(kPieceBytes));
    benchmark::AddCustomContext("mpi", mpi_version_string());
    return run_on_ranks(session, nullptr);
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    return gpurelay::bench::mpi_benchmark_main("bench_line", argc, argv, gpurelay::bench::run);
}
