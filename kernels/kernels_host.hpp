// The host twins of the kernels, run directly (the CPU path queues them on host streams).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/handoff.hpp"
#include "kernels/kernels.hpp"

namespace gpurelay::host {

// The values [begin, end) of a tensor: all of them, or one host thread's share (a role's block).
struct Share {
    std::size_t begin = 0, end = static_cast<std::size_t>(-1);
};

template <typename T>
void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form = {},
           Share share = {});
// Adds the mismatches to *x_mismatches atomically, so that threads may share the count.
template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected = {}, Share share = {});
void run_c(Span<std::uint32_t> z, std::uint64_t step, std::uint32_t seed, std::uint32_t iterations);
void run_verify_c(Span<const std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
                  std::uint32_t iterations, Counter* z_mismatches);
// A role's whole pass (ProducerArgs or ConsumerArgs) on the calling thread (its first block) and a
// thread for each further block, joined before it returns.
template <class Args>
void run_role(const Args& args);

}  // namespace gpurelay::host
