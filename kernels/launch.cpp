// Sends each launch to the CUDA kernel or, on a host stream, queues the host twin in stream order.
#include <algorithm>

#include "kernels/formula.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kernels_host.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include "kernels/kernels_cuda.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay {
namespace {

bool on_host(Stream& stream) { return stream.backend() == Backend::host; }
HostStream& as_host(Stream& stream) { return dynamic_cast<HostStream&>(stream); }

#if defined(GPURELAY_HAVE_CUDA)
cudaStream_t as_cuda(Stream& stream) { return cuda_handle(stream); }
#else
// Without CUDA every stream is a host stream; reaching here is a programming error.
[[noreturn]] void no_cuda() { throw runtime_error("CUDA stream in a build without CUDA"); }
#endif

// The step as a host twin reads it when its turn in the stream comes: the value itself, or the
// word the pointer names (written before the work runs, like the device word a graph reads).
std::uint64_t host_step(std::uint64_t step) { return step; }
std::uint64_t host_step(const std::uint64_t* step) { return *step; }

// One body per kernel for both ways of passing the step (Step: a value or a pointer).
template <typename T, typename Step>
void queue_a(Span<T> x, Step step, std::uint32_t seed, Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue([=] { host::run_a(x, host_step(step), seed); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_a(x, step, seed, as_cuda(stream));
#else
    no_cuda();
#endif
}

template <typename T, typename Step>
void queue_b(Span<const T> x, Span<T> y, T alpha, Step step, std::uint32_t seed,
             Counter* x_mismatches, Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue(
            [=] { host::run_b(x, y, alpha, host_step(step), seed, x_mismatches); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_b(x, y, alpha, step, seed, x_mismatches, as_cuda(stream));
#else
    no_cuda();
#endif
}

template <typename Step>
void queue_c(Span<std::uint32_t> z, Step step, std::uint32_t seed, std::uint32_t iterations,
             Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue([=] { host::run_c(z, host_step(step), seed, iterations); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_c(z, step, seed, iterations, as_cuda(stream));
#else
    no_cuda();
#endif
}

template <typename Step>
void queue_verify_c(Span<const std::uint32_t> z, Step step, std::uint32_t seed,
                    std::uint32_t iterations, Counter* z_mismatches, Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue(
            [=] { host::run_verify_c(z, host_step(step), seed, iterations, z_mismatches); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_verify_c(z, step, seed, iterations, z_mismatches, as_cuda(stream));
#else
    no_cuda();
#endif
}

}  // namespace

template <typename T>
void launch_a(Span<T> x, std::uint64_t step, std::uint32_t seed, Stream& stream) {
    queue_a(x, step, seed, stream);
}
template <typename T>
void launch_a(Span<T> x, const std::uint64_t* step, std::uint32_t seed, Stream& stream) {
    queue_a(x, step, seed, stream);
}

template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream) {
    queue_b(x, y, alpha, step, seed, x_mismatches, stream);
}
template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, const std::uint64_t* step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream) {
    queue_b(x, y, alpha, step, seed, x_mismatches, stream);
}

void launch_c(Span<std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
              std::uint32_t iterations, Stream& stream) {
    queue_c(z, step, seed, iterations, stream);
}
void launch_c(Span<std::uint32_t> z, const std::uint64_t* step, std::uint32_t seed,
              std::uint32_t iterations, Stream& stream) {
    queue_c(z, step, seed, iterations, stream);
}

void launch_verify_c(Span<const std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream) {
    queue_verify_c(z, step, seed, iterations, z_mismatches, stream);
}
void launch_verify_c(Span<const std::uint32_t> z, const std::uint64_t* step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream) {
    queue_verify_c(z, step, seed, iterations, z_mismatches, stream);
}

template <typename T>
std::uint64_t spot_check_y(Span<const T> y, T alpha, std::uint64_t step, std::uint32_t seed,
                           std::uint64_t samples) {
    const std::uint64_t n = y.size();
    if (n == 0) return 0;
    const std::uint64_t count = std::min<std::uint64_t>(samples, n);
    std::uint64_t bad = 0;
    for (std::uint64_t k = 0; k < count; ++k) {
        // Evenly spread, always including the first and the last element.
        const std::uint64_t i = count == 1 ? n - 1 : k * (n - 1) / (count - 1);
        const auto i32 = static_cast<std::uint32_t>(i);
        bad += y[i] != b_value(alpha, a_value<T>(step, i32, seed));
    }
    return bad;
}

template void launch_a<float>(Span<float>, std::uint64_t, std::uint32_t, Stream&);
template void launch_a<double>(Span<double>, std::uint64_t, std::uint32_t, Stream&);
template void launch_b<float>(Span<const float>, Span<float>, float, std::uint64_t, std::uint32_t,
                              Counter*, Stream&);
template void launch_b<double>(Span<const double>, Span<double>, double, std::uint64_t,
                               std::uint32_t, Counter*, Stream&);
template void launch_a<float>(Span<float>, const std::uint64_t*, std::uint32_t, Stream&);
template void launch_a<double>(Span<double>, const std::uint64_t*, std::uint32_t, Stream&);
template void launch_b<float>(Span<const float>, Span<float>, float, const std::uint64_t*,
                              std::uint32_t, Counter*, Stream&);
template void launch_b<double>(Span<const double>, Span<double>, double, const std::uint64_t*,
                               std::uint32_t, Counter*, Stream&);
template std::uint64_t spot_check_y<float>(Span<const float>, float, std::uint64_t, std::uint32_t,
                                           std::uint64_t);
template std::uint64_t spot_check_y<double>(Span<const double>, double, std::uint64_t,
                                            std::uint32_t, std::uint64_t);

}  // namespace gpurelay
