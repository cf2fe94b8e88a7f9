// The CUDA launches behind kernels.hpp (CUDA builds only). Each checks cudaGetLastError().
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "kernels/handoff.hpp"
#include "kernels/kernels.hpp"

namespace gpurelay::cuda {

template <typename T>
void run_a(Span<T> x, StepArg step, std::uint32_t seed, TensorForm form, cudaStream_t stream);
template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, StepArg step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected, cudaStream_t stream);
void run_c(Span<std::uint32_t> z, StepArg step, std::uint32_t seed, std::uint32_t iterations,
           cudaStream_t stream);
void run_verify_c(Span<const std::uint32_t> z, StepArg step, std::uint32_t seed,
                  std::uint32_t iterations, Counter* z_mismatches, cudaStream_t stream);

// A role of launch = "device" (ProducerArgs or ConsumerArgs; handoff_cuda.cu).
template <class Args>
void run_role(const Args& args, cudaStream_t stream);
std::uint32_t sm_count();  // this process's GPU's SMs
// The most blocks of the role kernels resident at once (the fewest per SM of the four, times the
// SMs): a producer's and a consumer's blocks fit when their sum is at most this.
std::uint64_t handoff_capacity();

// Loads each of `kernels` (a __global__ function's address), or A, B, C and C's check, into this
// process's context now rather than at its first launch (handoff_cuda.cu says why).
void load_kernels(std::initializer_list<const void*> kernels);
void load_step_kernels();

}  // namespace gpurelay::cuda
