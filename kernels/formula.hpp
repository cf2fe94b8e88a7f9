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

// Kernel B: one rounding of one product, so every IEEE machine gives the same bits.
template <typename T>
GPURELAY_HD inline T b_value(T alpha, T x) {
    return alpha * x;
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
