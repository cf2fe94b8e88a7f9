// Sends each launch to the CUDA kernel or, on a host stream, queues the host twin in stream order:
// A, B, C and C's check, and the roles of launch = "device" (with how many blocks a role gets, and
// whether a pair of roles fits the GPU).
#include <algorithm>

#include "kernels/formula.hpp"
#include "kernels/handoff.hpp"
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

}  // namespace

// A launch on a CUDA stream, which only a CUDA build has: without CUDA every stream is a host
// stream, and reaching here is a programming error.
#if defined(GPURELAY_HAVE_CUDA)
#define ON_CUDA(launch) launch
#else
#define ON_CUDA(launch) throw runtime_error("CUDA stream in a build without CUDA")
#endif

template <typename T>
void launch_a(Span<T> x, StepArg step, std::uint32_t seed, Stream& stream, TensorForm form) {
    if (on_host(stream))
        return as_host(stream).enqueue([=] { host::run_a(x, step.read(), seed, form); });
    ON_CUDA(cuda::run_a(x, step, seed, form, cuda_handle(stream)));
}

template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, StepArg step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream, TensorForm expected) {
    if (on_host(stream)) {
        return as_host(stream).enqueue(
            [=] { host::run_b(x, y, alpha, step.read(), seed, x_mismatches, expected); });
    }
    ON_CUDA(cuda::run_b(x, y, alpha, step, seed, x_mismatches, expected, cuda_handle(stream)));
}

void launch_c(Span<std::uint32_t> z, StepArg step, std::uint32_t seed, std::uint32_t iterations,
              Stream& stream) {
    if (on_host(stream))
        return as_host(stream).enqueue([=] { host::run_c(z, step.read(), seed, iterations); });
    ON_CUDA(cuda::run_c(z, step, seed, iterations, cuda_handle(stream)));
}

void launch_verify_c(Span<const std::uint32_t> z, StepArg step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream) {
    if (on_host(stream)) {
        return as_host(stream).enqueue(
            [=] { host::run_verify_c(z, step.read(), seed, iterations, z_mismatches); });
    }
    ON_CUDA(cuda::run_verify_c(z, step, seed, iterations, z_mismatches, cuda_handle(stream)));
}

template <class Args>
void launch_role(const Args& args, Stream& stream) {
    if (on_host(stream)) return as_host(stream).enqueue([args] { host::run_role(args); });
    ON_CUDA(cuda::run_role(args, cuda_handle(stream)));
}

std::uint32_t handoff_blocks([[maybe_unused]] Backend backend, std::uint64_t elements,
                             std::size_t value_bytes, std::int64_t cap) {
    const std::uint64_t vectors = (elements * value_bytes + 15) / 16;
    const std::uint64_t filled =
        std::max<std::uint64_t>(1, (vectors + kHandOffThreads - 1) / kHandOffThreads);
    std::uint64_t most = cap > 0 ? static_cast<std::uint64_t>(cap) : 1;
#if defined(GPURELAY_HAVE_CUDA)
    if (backend == Backend::cuda && cap == 0) most = cuda::sm_count();
#endif
    return static_cast<std::uint32_t>(std::min(filled, most));
}

void check_handoff_fits(Backend backend, [[maybe_unused]] std::uint32_t producer_blocks,
                        [[maybe_unused]] std::uint32_t consumer_blocks) {
    if (backend != Backend::cuda) return;
#if defined(GPURELAY_HAVE_CUDA)
    const std::uint64_t capacity = cuda::handoff_capacity();
    if (std::uint64_t{producer_blocks} + consumer_blocks > capacity) {
        throw usage_error("launch = \"device\": the producer's " + std::to_string(producer_blocks) +
                          " and the consumer's " + std::to_string(consumer_blocks) +
                          " blocks cannot all be resident on this GPU, which holds " +
                          std::to_string(capacity) + " of them at once (lower device_blocks)");
    }
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
template void launch_role(const ProducerArgs<float>&, Stream&);
template void launch_role(const ProducerArgs<double>&, Stream&);
template void launch_role(const ConsumerArgs<float>&, Stream&);
template void launch_role(const ConsumerArgs<double>&, Stream&);
template std::uint64_t spot_check_y<float>(Span<const float>, float, std::uint64_t, std::uint32_t,
                                           std::uint64_t, TensorForm);
template std::uint64_t spot_check_y<double>(Span<const double>, double, std::uint64_t,
                                            std::uint32_t, std::uint64_t, TensorForm);

}  // namespace gpurelay
