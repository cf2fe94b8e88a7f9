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
// The hand-off floor (bench_handoff): a kernel of one thread on each side that only passes a count
// back and forth through two words, each side waiting on its own and writing the other's.
struct HandOffFloor {
    const std::uint32_t* wait_on;
    std::uint32_t* write_to;
    std::uint32_t base;          // both words' value before the launch
    std::uint32_t warm, rounds;  // round trips before the timed ones, and timed
    bool starts;                 // this side sends first (and stamps the timed rounds)
    std::uint64_t timeout_ns;    // each wait's bound
    std::uint64_t* elapsed_ns;   // the starting side's timed rounds (pinned host memory)
    std::uint32_t* failed;       // 1 when a wait ran out (pinned host memory)
};
void run_handoff_floor(const HandOffFloor& floor, cudaStream_t stream);
// This process's GPU's SMs.
std::uint32_t sm_count();
// The most blocks of the role kernels that are resident at once (the fewer per SM of the two
// kernels, times the SMs).
std::uint64_t handoff_capacity();

}  // namespace gpurelay::cuda
