// The host twins of the kernels, run directly (the CPU path queues them on host streams).
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace gpurelay::host {

template <typename T>
void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form = {});
template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected = {});
void run_c(Span<std::uint32_t> z, std::uint64_t step, std::uint32_t seed, std::uint32_t iterations);
void run_verify_c(Span<const std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
                  std::uint32_t iterations, Counter* z_mismatches);

}  // namespace gpurelay::host
