// The element functions every kernel and its host twin share, so the CPU path, the GPU path and
// the reference cannot drift apart. All integer arithmetic is unsigned 32-bit and wraps.
#pragma once

#include <cstdint>

#include "runtime/span.hpp"

namespace gpurelay {

// Kernel A's 24 random bits for element i of step s.
GPURELAY_HD inline std::uint32_t a_bits(std::uint64_t step, std::uint32_t i, std::uint32_t seed) {
    const std::uint32_t s = static_cast<std::uint32_t>(step);
    const std::uint32_t u = (i * 2654435761u) ^ (s * 2654435769u + seed);
    return u >> 8;
}

// x[i] = (u >> 8) * 2^-24: at most 24 significant bits, so exact in float32 and float64.
template <typename T>
GPURELAY_HD inline T a_value(std::uint64_t step, std::uint32_t i, std::uint32_t seed) {
    return static_cast<T>(a_bits(step, i, seed)) * static_cast<T>(1.0 / 16777216.0);
}

// What A writes and B checks x against, in one shape:
//   x[i] = (scale * (a_bits(s, i, seed) >> shift) + offset) * 2^-24, then `hops` times alpha * x.
// One rank's tensor (pairs, broadcast) is {0, 1, 0}: x = a_value above. An all-reduce gives group
// rank r the share {kShareShift, 1, r}, and the sum of a group of n shares is
// {kShareShift, n, n(n-1)/2}: every share, and every sum of shares in any order, is an integer
// below 2^24 times 2^-24 (kMaxAllreduceGroup bounds n), so the sums NCCL or MPI form are exact in
// float32 and float64 and the check stays bit for bit. A relay's stage k receives k - 1 = `hops`
// products y = alpha * x, rounded one at a time in the tensor's type as the stages rounded them,
// so its check stays bit for bit for any alpha.
struct TensorForm {
    std::uint32_t shift = 0;
    std::uint32_t scale = 1;
    std::uint32_t offset = 0;
    std::uint32_t hops = 0;
    double alpha = 1;
};

// Bits an all-reduce share drops from A's 24, to leave room for the sum.
inline constexpr std::uint32_t kShareShift = 9;
// The largest all-reduce group whose sums are exact: n shares below 2^(24 - kShareShift) + n - 1
// add up to less than 2^24, the integers float32 holds exactly.
inline constexpr int kMaxAllreduceGroup = 256;
static_assert(static_cast<std::uint64_t>(kMaxAllreduceGroup) *
                          ((std::uint64_t{1} << (24 - kShareShift)) - 1) +
                      static_cast<std::uint64_t>(kMaxAllreduceGroup) * (kMaxAllreduceGroup - 1) /
                          2 <
                  (std::uint64_t{1} << 24),
              "an all-reduce sum of kMaxAllreduceGroup shares must stay below 2^24");

// Rank `group_rank`'s share of an all-reduce.
constexpr TensorForm allreduce_share(int group_rank) {
    return {kShareShift, 1u, static_cast<std::uint32_t>(group_rank), 0, 1.0};
}
// The sum of the shares of group ranks 0 .. group_size - 1.
constexpr TensorForm allreduce_sum(int group_size) {
    const auto n = static_cast<std::uint32_t>(group_size);
    return {kShareShift, n, n * (n - 1) / 2, 0, 1.0};
}

// Kernel B: one rounding of one product, so every IEEE machine gives the same bits.
template <typename T>
GPURELAY_HD inline T b_value(T alpha, T x) {
    return alpha * x;
}

// Element i of step s in `form` (a_value for the default form).
template <typename T>
GPURELAY_HD inline T form_value(std::uint64_t step, std::uint32_t i, std::uint32_t seed,
                                TensorForm form) {
    const std::uint32_t k = form.scale * (a_bits(step, i, seed) >> form.shift) + form.offset;
    T x = static_cast<T>(k) * static_cast<T>(1.0 / 16777216.0);
    for (std::uint32_t h = 0; h < form.hops; ++h) x = b_value(static_cast<T>(form.alpha), x);
    return x;
}

// What stage `stage` of a relay receives: A's output after stage - 1 products by alpha.
constexpr TensorForm relay_received(int stage, double alpha) {
    return {0, 1, 0, static_cast<std::uint32_t>(stage - 1), alpha};
}

// Kernel C iterates a 32-bit linear congruential generator; its start value per element and step.
inline constexpr std::uint32_t kLcgMultiplier = 1664525u;
inline constexpr std::uint32_t kLcgIncrement = 1013904223u;

GPURELAY_HD inline std::uint32_t c_start(std::uint64_t step, std::uint32_t i, std::uint32_t seed) {
    return i * 0x9E3779B1u + static_cast<std::uint32_t>(step) * 0x85EBCA77u + seed;
}

GPURELAY_HD inline std::uint32_t c_iterate(std::uint32_t z, std::uint32_t iterations) {
    for (std::uint32_t k = 0; k < iterations; ++k) z = z * kLcgMultiplier + kLcgIncrement;
    return z;
}

// n iterations of the generator as one affine map z -> multiplier * z + increment, found in
// O(log n) by squaring: kernel C's result is checked without redoing its work.
struct AffineMap {
    std::uint32_t multiplier;
    std::uint32_t increment;
};

GPURELAY_HD inline AffineMap lcg_jump(std::uint32_t n) {
    AffineMap acc{1u, 0u};
    AffineMap cur{kLcgMultiplier, kLcgIncrement};
    while (n > 0) {
        if (n & 1u) {
            acc.multiplier *= cur.multiplier;
            acc.increment = acc.increment * cur.multiplier + cur.increment;
        }
        cur.increment = (cur.multiplier + 1u) * cur.increment;
        cur.multiplier *= cur.multiplier;
        n >>= 1;
    }
    return acc;
}

GPURELAY_HD inline std::uint32_t c_expected(AffineMap jump, std::uint64_t step, std::uint32_t i,
                                            std::uint32_t seed) {
    return jump.multiplier * c_start(step, i, seed) + jump.increment;
}

}  // namespace gpurelay
