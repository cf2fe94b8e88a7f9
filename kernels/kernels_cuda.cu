// CUDA kernels A, B (with fused verification), C and C's check. Memory-bound kernels move 16 bytes
// per thread per access, coalesced across the warp, over a grid sized to fill the GPU.
#include <algorithm>

#include "kernels/formula.hpp"
#include "kernels/kernels_cuda.hpp"
#include "kernels/value_loops.cuh"
#include "runtime/error.hpp"

namespace gpurelay::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to cover `work` items, capped at a few waves so a grid-stride loop takes the rest.
int grid_for(std::size_t work) {
    static const int cap = static_cast<int>(sm_count()) * 8;
    const std::size_t blocks = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(blocks, cap)));
}

template <typename T>
__global__ void a_kernel(Span<T> x, StepArg step_arg, std::uint32_t seed, TensorForm form) {
    fill_a(x, step_arg.read(), seed, form, grid_thread(), grid_threads());
}

template <typename T>
__global__ void b_kernel(Span<const T> x, Span<T> y, T alpha, StepArg step_arg, std::uint32_t seed,
                         Counter* x_mismatches, TensorForm expected) {
    const Counter bad =
        scale_b(x, y, alpha, step_arg.read(), seed, expected, grid_thread(), grid_threads());
    // Mismatches are the rare case: a correct run issues no atomics at all.
    if (bad != 0) atomicAdd(x_mismatches, bad);
}

__global__ void c_kernel(Span<std::uint32_t> z, StepArg step_arg, std::uint32_t seed,
                         std::uint32_t iterations) {
    const std::uint64_t step = step_arg.read();
    for (std::size_t i = grid_thread(); i < z.size(); i += grid_threads()) {
        z[i] = c_iterate(c_start(step, static_cast<std::uint32_t>(i), seed), iterations);
    }
}

__global__ void verify_c_kernel(Span<const std::uint32_t> z, StepArg step_arg, std::uint32_t seed,
                                AffineMap jump, Counter* z_mismatches) {
    const std::uint64_t step = step_arg.read();
    Counter bad = 0;
    for (std::size_t i = grid_thread(); i < z.size(); i += grid_threads()) {
        bad += z[i] != c_expected(jump, step, static_cast<std::uint32_t>(i), seed);
    }
    if (bad != 0) atomicAdd(z_mismatches, bad);
}

}  // namespace

template <typename T>
void run_a(Span<T> x, StepArg step, std::uint32_t seed, TensorForm form, cudaStream_t stream) {
    a_kernel<T>
        <<<grid_for(x.size() / Vec<T>::kWidth + 1), kThreads, 0, stream>>>(x, step, seed, form);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, StepArg step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected, cudaStream_t stream) {
    b_kernel<T><<<grid_for(x.size() / Vec<T>::kWidth + 1), kThreads, 0, stream>>>(
        x, y, alpha, step, seed, x_mismatches, expected);
    CUDA_CHECK(cudaGetLastError());
}

void run_c(Span<std::uint32_t> z, StepArg step, std::uint32_t seed, std::uint32_t iterations,
           cudaStream_t stream) {
    if (z.size() == 0) return;
    c_kernel<<<grid_for(z.size()), kThreads, 0, stream>>>(z, step, seed, iterations);
    CUDA_CHECK(cudaGetLastError());
}

void run_verify_c(Span<const std::uint32_t> z, StepArg step, std::uint32_t seed,
                  std::uint32_t iterations, Counter* z_mismatches, cudaStream_t stream) {
    if (z.size() == 0) return;
    verify_c_kernel<<<grid_for(z.size()), kThreads, 0, stream>>>(
        z, step, seed, lcg_jump(iterations), z_mismatches);
    CUDA_CHECK(cudaGetLastError());
}

template void run_a<float>(Span<float>, StepArg, std::uint32_t, TensorForm, cudaStream_t);
template void run_a<double>(Span<double>, StepArg, std::uint32_t, TensorForm, cudaStream_t);
template void run_b<float>(Span<const float>, Span<float>, float, StepArg, std::uint32_t, Counter*,
                           TensorForm, cudaStream_t);
template void run_b<double>(Span<const double>, Span<double>, double, StepArg, std::uint32_t,
                            Counter*, TensorForm, cudaStream_t);

// A kernel's attributes are read from its loaded code, so asking for them loads it.
void load_kernels(std::initializer_list<const void*> kernels) {
    cudaFuncAttributes attributes{};
    for (const void* kernel : kernels) CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
}

void load_step_kernels() {
    load_kernels({reinterpret_cast<const void*>(a_kernel<float>),
                  reinterpret_cast<const void*>(a_kernel<double>),
                  reinterpret_cast<const void*>(b_kernel<float>),
                  reinterpret_cast<const void*>(b_kernel<double>),
                  reinterpret_cast<const void*>(c_kernel),
                  reinterpret_cast<const void*>(verify_c_kernel)});
}

}  // namespace gpurelay::cuda
