// What the benchmark programs share: sizes, the failure record behind the exit code, the count
// of wrong values, an MPI benchmark's start and end, and every result file's provenance.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "runtime/buffer.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
class Device;
class MpiSession;
}  // namespace gpurelay

namespace gpurelay::bench {

// The largest size: $GPURELAY_BENCH_MAX_BYTES (bytes, or with a K, M or G suffix meaning powers of
// 1024; a multiple of 4 KiB, at least 4 KiB), else 1 GiB. Throws a usage error on a bad value.
std::size_t max_bytes_from_env();

// 4 KiB, 16 KiB, 64 KiB, ... (x4) up to `max_bytes`, ending with `max_bytes` itself.
std::vector<std::size_t> bench_sizes(std::size_t max_bytes);

// A fixed count for `bytes`, the same on every rank (lock-step): about 1 GiB moved, 5 to 200.
benchmark::IterationCount iterations_for(std::size_t bytes);

using Body = std::function<void(benchmark::State&, std::size_t bytes)>;

// `fn(state, bench, extra..., bytes)` as a Body; `extra` by value (std::ref passes a buffer).
template <typename Bench, typename Fn, typename... Extra>
Body on(Bench& bench, Fn fn, Extra... extra) {
    return [&bench, fn, extra...](benchmark::State& state, std::size_t bytes) {
        fn(state, bench, extra..., bytes);
    };
}

// Registers `body` as NAME/BYTES: `iterations` on every rank, timed by the body, reported in µs.
void register_timed(const std::string& name, std::size_t bytes,
                    benchmark::IterationCount iterations,
                    std::function<void(benchmark::State&)> body);

// `bytes` times the iterations run, for SetBytesProcessed and SetItemsProcessed.
std::int64_t per_run(const benchmark::State& state, std::size_t bytes);

// Marks it failed (a wrong result, a missing library): the run goes on, the exit is non-zero.
void fail(benchmark::State& state, const std::string& message);
bool any_failed();

// "no GPU found" or "built without CUDA": why a GPU benchmark has nothing to time.
const char* no_gpu();

// A mismatch count on the device, read back through pinned memory.
class WrongCount {
  public:
    explicit WrongCount(Device& device);
    // Zeroes the count in `stream`'s order; the kernels add to what it returns.
    Counter* reset(Stream& stream);
    Counter read(Stream& stream);
    Counter* counter() { return counter_.as<Counter>().data(); }
    // How many of `x` differ from A's values of `step` in form `expected`: B with alpha 1
    // counts them, writing `scratch`.
    Counter count_b(Span<const float> x, Span<float> scratch, std::uint64_t step,
                    std::uint32_t seed, Stream& stream, TensorForm expected = {});

  private:
    Device& device_;
    Buffer counter_;
    Buffer host_;
};

// An MPI benchmark's main: MPI up, Google Benchmark's flags parsed on every rank (only rank 0 keeps
// --benchmark_out, which the others would truncate; exit 2 on an unknown flag), then `run`. An
// escaping or fatal error prints one line naming `program` and the rank and ends the job, which
// would otherwise wait for ever. Host waits are `prompt`, as on gpurelay's GPU path: under Open
// MPI's shared memory a large message moves only while both ranks look (`sparing` would slow it).
int mpi_benchmark_main(const char* program, int argc, char** argv, int (*run)(MpiSession& session));

// Rank 0 prints "PROGRAM: TEXT" on stderr.
void say(const MpiSession& session, const std::string& text);

// Collective: whether every rank sees a GPU (their benchmark lists must agree).
bool gpu_on_every_rank();

// Collective, each bounded by timeout_s's default (a rank that never answers ends the job): a
// barrier; the sum of every rank's `mine`; the slowest rank's host-clock seconds since `begin`.
void barrier();
std::uint64_t summed(std::uint64_t mine);
double slowest_since(std::chrono::steady_clock::time_point begin);

// Collective (two ranks): whether they drive different GPUs (host, PCI bus id), as NCCL needs.
bool on_distinct_gpus(const MpiSession& session, Device& device);

// Runs the registered benchmarks on every rank, only rank 0 reporting. Where a check failed on
// any rank, rank 0 says `why` (unless null) and every rank returns `code`; else 0.
int run_on_ranks(const MpiSession& session, const char* why,
                 ExitCode code = ExitCode::verification);

// Adds gpurelay's version, git hash and library versions to the benchmark context (JSON output).
void add_provenance_context();

}  // namespace gpurelay::bench
