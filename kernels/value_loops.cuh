// Inside kernels/ (CUDA only): the loops over a tensor's values that kernels A and B, and the
// roles' kernels for their share of a step, run. Each thread of `threads` takes 16-byte vectors
// `thread`, `thread + threads`, ..., coalesced across the warp, then the values past the last
// whole vector, from the element functions (formula.hpp) as the host twins do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formula.hpp"
#include "kernels/kernels.hpp"
#include "runtime/span.hpp"

namespace gpurelay::cuda {

// The loads of x each thread of B keeps in flight.
inline constexpr int kLoadsInFlight = 4;

template <typename T>
struct alignas(16) Vec {
    static constexpr int kWidth = 16 / sizeof(T);
    T v[kWidth];
};

__device__ inline std::size_t grid_thread() {
    return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_threads() {
    return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// A, this thread's share.
template <typename T>
__device__ void fill_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form,
                       std::size_t thread, std::size_t threads) {
    constexpr int W = Vec<T>::kWidth;
    const std::size_t vectors = x.size() / W;
    auto* xv = reinterpret_cast<Vec<T>*>(x.data());
    for (std::size_t v = thread; v < vectors; v += threads) {
        Vec<T> out;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            out.v[k] = form_value<T>(step, static_cast<std::uint32_t>(v * W + k), seed, form);
        }
        xv[v] = out;
    }
    for (std::size_t i = vectors * W + thread; i < x.size(); i += threads) {
        x[i] = form_value<T>(step, static_cast<std::uint32_t>(i), seed, form);
    }
}

// B, this thread's share; returns how many of its x[i] differ from the formula (kernels.hpp).
template <typename T>
__device__ Counter scale_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step,
                           std::uint32_t seed, TensorForm expected, std::size_t thread,
                           std::size_t threads) {
    constexpr int W = Vec<T>::kWidth;
    const std::size_t vectors = x.size() / W;
    const auto* xv = reinterpret_cast<const Vec<T>*>(x.data());
    auto* yv = reinterpret_cast<Vec<T>*>(y.data());
    Counter bad = 0;
    const auto scale = [&](std::size_t v, const Vec<T>& in) {
        Vec<T> out;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            bad += in.v[k] !=
                   form_value<T>(step, static_cast<std::uint32_t>(v * W + k), seed, expected);
            out.v[k] = b_value(alpha, in.v[k]);
        }
        yv[v] = out;
    };
    // kLoadsInFlight loads issued before the first is used: a persistent role has a few warps an
    // SM, and one 16-byte load a thread at a time would leave the memory's latency exposed.
    std::size_t v = thread;
    for (; v + (kLoadsInFlight - 1) * threads < vectors; v += kLoadsInFlight * threads) {
        Vec<T> in[kLoadsInFlight];
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; ++u) in[u] = xv[v + u * threads];
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; ++u) scale(v + u * threads, in[u]);
    }
    for (; v < vectors; v += threads) scale(v, xv[v]);
    for (std::size_t i = vectors * W + thread; i < x.size(); i += threads) {
        const T xi = x[i];
        bad += xi != form_value<T>(step, static_cast<std::uint32_t>(i), seed, expected);
        y[i] = b_value(alpha, xi);
    }
    return bad;
}

}  // namespace gpurelay::cuda
