// What the benchmark programs share: the message sizes, the failure record that sets the exit
// code, and the provenance every result file carries.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gpurelay {
class Device;
class Error;
class MpiSession;
}  // namespace gpurelay

namespace gpurelay::bench {

inline constexpr std::size_t kMinBytes = 4096;
inline constexpr std::size_t kDefaultMaxBytes = std::size_t{1} << 30;

// The largest size: $GPURELAY_BENCH_MAX_BYTES (bytes, or with a K, M or G suffix meaning powers of
// 1024; a multiple of 4 KiB, at least 4 KiB), else 1 GiB. Throws a usage error on a bad value.
std::size_t max_bytes_from_env();

// 4 KiB, 16 KiB, 64 KiB, ... (x4) up to `max_bytes`, ending with `max_bytes` itself.
std::vector<std::size_t> bench_sizes(std::size_t max_bytes);

// A fixed iteration count for messages of `bytes`, the same on every rank (an MPI benchmark's
// ranks must stay in lock-step): about 1 GiB moved per benchmark (well under a second on an H200
// node), at least 5 iterations for the largest messages and at most 200 for the smallest.
benchmark::IterationCount iterations_for(std::size_t bytes);

// "4 KiB", "16 MiB", "1 GiB" (exact binary units, else bytes).
std::string size_label(std::size_t bytes);

// Marks the benchmark failed (a wrong result, a missing library): the run goes on, the program
// then exits non-zero.
void fail(benchmark::State& state, const std::string& message);
// Whether fail() was called.
bool any_failed();

// Prints nothing: every rank but 0 of an MPI benchmark runs with it.
class NullReporter final : public benchmark::BenchmarkReporter {
  public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

// Google Benchmark's start for an MPI program: every rank parses the same flags, but only rank 0
// keeps --benchmark_out (the others would truncate the same file). False, after a message, on
// an unknown flag.
bool initialize_on_ranks(const MpiSession& session, int argc, char** argv);
// Runs the registered benchmarks on every rank; only rank 0 reports.
void run_on_ranks(const MpiSession& session);

// Collective over MPI_COMM_WORLD (two ranks): whether they drive different GPUs (another host,
// or another PCI bus id on the same one). NCCL refuses two ranks on one GPU.
bool on_distinct_gpus(const MpiSession& session, Device& device);

// For errors where nothing can catch them (a proxy thread) and errors that reach main in an MPI
// benchmark: one line naming `program` and the rank, then the whole job ends, since the other
// rank would otherwise wait for ever.
[[noreturn]] void abort_job(const char* program, const Error& error) noexcept;

// The whole main of an MPI benchmark program: MPI up, then `run`; an error that escapes it, or
// that reaches the fatal handler (a proxy thread's, a wait's watchdog), ends the whole job
// through abort_job, named `program`. The hosts' waits are `prompt`, as gpurelay's on the GPU
// path: a benchmark that is a ceiling for gpurelay waits as gpurelay does (with Open MPI's
// shared memory copying in and out, a large message moves only while both its ranks look, so
// `sparing`'s long pauses would slow the very transfer the benchmark measures).
int mpi_benchmark_main(const char* program, int argc, char** argv,
                       int (*run)(MpiSession& session, int argc, char** argv));

// Adds gpurelay's version, git hash and library versions to the benchmark context (JSON output).
void add_provenance_context();

}  // namespace gpurelay::bench
