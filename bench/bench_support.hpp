// What both benchmark programs share: the message sizes, the failure record that sets the exit
// code, and the provenance every result file carries.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gpurelay::bench {

inline constexpr std::size_t kMinBytes = 4096;
inline constexpr std::size_t kDefaultMaxBytes = std::size_t{1} << 30;

// The largest size: $GPURELAY_BENCH_MAX_BYTES (bytes, or with a K, M or G suffix meaning powers of
// 1024; a multiple of 4 KiB, at least 4 KiB), else 1 GiB. Throws a usage error on a bad value.
std::size_t max_bytes_from_env();

// 4 KiB, 16 KiB, 64 KiB, ... (x4) up to `max_bytes`, ending with `max_bytes` itself.
std::vector<std::size_t> bench_sizes(std::size_t max_bytes);

// "4 KiB", "16 MiB", "1 GiB" (exact binary units, else bytes).
std::string size_label(std::size_t bytes);

// Marks the benchmark failed (a wrong result, a missing library): the run goes on, the program
// then exits non-zero.
void fail(benchmark::State& state, const std::string& message);
// Whether fail() was called.
bool any_failed();

// Adds gpurelay's version, git hash and library versions to the benchmark context (JSON output).
void add_provenance_context();

}  // namespace gpurelay::bench
