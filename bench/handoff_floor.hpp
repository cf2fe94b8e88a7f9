// The hand-off floor's kernel (bench_handoff; CUDA builds only): one thread a side passes a count
// back and forth with the other side's through slot 0's flags, with the waits and signals a role's
// step makes (kernels/handoff_protocol.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/slot_flags.hpp"

namespace gpurelay::bench {

struct HandOffFloor {
    SlotFlags flags;             // this side's flags (the ipc transport's), as the launch starts
    SlotFlags* home;             // where their counts live between launches
    std::uint32_t warm, rounds;  // round trips before the timed ones, and timed
    bool starts;                 // this side signals first (the producer's) and stamps the rounds
    std::uint64_t timeout_ns;    // each wait's bound
    std::uint64_t* elapsed_ns;   // the starting side's timed rounds (pinned host memory)
    std::uint32_t* failed;       // 1 when a wait ran out (pinned host memory)
};
// Queues one side's `warm` round trips and then `rounds` timed ones on `stream`.
void run_handoff_floor(const HandOffFloor& floor, cudaStream_t stream);

}  // namespace gpurelay::bench
