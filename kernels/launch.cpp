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

}  // namespace

template <typename T>
void launch_a(Span<T> x, StepArg step, std::uint32_t seed, Stream& stream, TensorForm form) {
    if (on_host(stream)) {
        as_host(stream).enqueue([=] { host::run_a(x, step.read(), seed, form); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_a(x, step, seed, form, as_cuda(stream));
#else
    no_cuda();
#endif
}

template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, StepArg step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream, TensorForm expected) {
    if (on_host(stream)) {
        as_host(stream).enqueue(
            [=] { host::run_b(x, y, alpha, step.read(), seed, x_mismatches, expected); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_b(x, y, alpha, step, seed, x_mismatches, expected, as_cuda(stream));
#else
    no_cuda();
#endif
}

void launch_c(Span<std::uint32_t> z, StepArg step, std::uint32_t seed, std::uint32_t iterations,
              Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue([=] { host::run_c(z, step.read(), seed, iterations); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_c(z, step, seed, iterations, as_cuda(stream));
#else
    no_cuda();
#endif
}

void launch_verify_c(Span<const std::uint32_t> z, StepArg step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream) {
    if (on_host(stream)) {
        as_host(stream).enqueue(
            [=] { host::run_verify_c(z, step.read(), seed, iterations, z_mismatches); });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_verify_c(z, step, seed, iterations, z_mismatches, as_cuda(stream));
#else
    no_cuda();
#endif
}

template <typename T>
std::uint64_t spot_check_y(Span<const T> y, T alpha, std::uint64_t step, std::uint32_t seed,
                           std::uint64_t samples, TensorForm expected) {
    const std::uint64_t n = y.size();
    if (n == 0) return 0;
    const std::uint64_t count = std::min<std::uint64_t>(samples, n);
    std::uint64_t bad = 0;
    for (std::uint64_t k = 0; k < count; ++k) {
        // Evenly spread, always including the first and the last element.
        const std::uint64_t i = count == 1 ? n - 1 : k * (n - 1) / (count - 1);
        const auto i32 = static_cast<std::uint32_t>(i);
        bad += y[i] != b_value(alpha, form_value<T>(step, i32, seed, expected));
    }
    return bad;
}

template void launch_a<float>(Span<float>, StepArg, std::uint32_t, Stream&, TensorForm);
template void launch_a<double>(Span<double>, StepArg, std::uint32_t, Stream&, TensorForm);
template void launch_b<float>(Span<const float>, Span<float>, float, StepArg, std::uint32_t,
                              Counter*, Stream&, TensorForm);
template void launch_b<double>(Span<const double>, Span<double>, double, StepArg, std::uint32_t,
                               Counter*, Stream&, TensorForm);
template std::uint64_t spot_check_y<float>(Span<const float>, float, std::uint64_t, std::uint32_t,
                                           std::uint64_t, TensorForm);
template std::uint64_t spot_check_y<double>(Span<const double>, double, std::uint64_t,
                                            std::uint32_t, std::uint64_t, TensorForm);

}  // namespace gpurelay
