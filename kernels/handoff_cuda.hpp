// The CUDA launches behind handoff.hpp (CUDA builds only). Each checks cudaGetLastError().
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/handoff.hpp"

namespace gpurelay::cuda {

template <typename T>
void run_producer_role(const ProducerArgs<T>& args, cudaStream_t stream);
template <typename T>
void run_consumer_role(const ConsumerArgs<T>& args, cudaStream_t stream);
// This process's GPU's SMs.
std::uint32_t sm_count();
// The most blocks of the role kernels that are resident at once (the fewer per SM of the two
// kernels, times the SMs).
std::uint64_t handoff_capacity();

}  // namespace gpurelay::cuda
