// Kernels A, B and C and their checks. Each call queues the work on `stream` and returns: on a
// CUDA stream it launches the kernel, on a host stream the host twin runs in the stream's order.
#pragma once

#include <cstdint>

#include "runtime/span.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

using Counter = unsigned long long;

// A: x[i] = a_value(step, i, seed).
template <typename T>
void launch_a(Span<T> x, std::uint64_t step, std::uint32_t seed, Stream& stream);

// B: y[i] = alpha * x[i], and adds to *x_mismatches how many x[i] differ from A's formula for
// `step` (verification fused into B: one read of x, one write of y).
template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream);

// C: z[i] = c_iterate(c_start(step, i, seed), iterations); independent of x and y.
void launch_c(Span<std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
              std::uint32_t iterations, Stream& stream);

// Adds to *z_mismatches how many z[i] differ from C's closed form (read-only pass over z).
void launch_verify_c(Span<const std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream);

// The same four launches with the step read from `*step` (device memory) when the kernel runs,
// not when it is queued: a captured graph replays one launch for many steps, and the step it
// works on is whatever was copied into that word first. On a host stream the twin reads it.
template <typename T>
void launch_a(Span<T> x, const std::uint64_t* step, std::uint32_t seed, Stream& stream);
template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, const std::uint64_t* step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream);
void launch_c(Span<std::uint32_t> z, const std::uint64_t* step, std::uint32_t seed,
              std::uint32_t iterations, Stream& stream);
void launch_verify_c(Span<const std::uint32_t> z, const std::uint64_t* step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream);

// Host reference, run now on the calling thread: mismatches of y against alpha * A's formula
// at `samples` indices spread over y (all of them when samples >= y.size()).
template <typename T>
std::uint64_t spot_check_y(Span<const T> y, T alpha, std::uint64_t step, std::uint32_t seed,
                           std::uint64_t samples);

}  // namespace gpurelay
