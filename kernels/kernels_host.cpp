#include "kernels/kernels_host.hpp"

#include "kernels/formula.hpp"

namespace gpurelay::host {

template <typename T>
void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form) {
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = form_value<T>(step, static_cast<std::uint32_t>(i), seed, form);
    }
}

template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected) {
    Counter bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const T xi = x[i];
        bad += xi != form_value<T>(step, static_cast<std::uint32_t>(i), seed, expected);
        y[i] = b_value(alpha, xi);
    }
    *x_mismatches += bad;
}

void run_c(Span<std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
           std::uint32_t iterations) {
    for (std::size_t i = 0; i < z.size(); ++i) {
        z[i] = c_iterate(c_start(step, static_cast<std::uint32_t>(i), seed), iterations);
    }
}

void run_verify_c(Span<const std::uint32_t> z, std::uint64_t step, std::uint32_t seed,
                  std::uint32_t iterations, Counter* z_mismatches) {
    const AffineMap jump = lcg_jump(iterations);
    Counter bad = 0;
    for (std::size_t i = 0; i < z.size(); ++i) {
        bad += z[i] != c_expected(jump, step, static_cast<std::uint32_t>(i), seed);
    }
    *z_mismatches += bad;
}

template void run_a<float>(Span<float>, std::uint64_t, std::uint32_t, TensorForm);
template void run_a<double>(Span<double>, std::uint64_t, std::uint32_t, TensorForm);
template void run_b<float>(Span<const float>, Span<float>, float, std::uint64_t, std::uint32_t,
                           Counter*, TensorForm);
template void run_b<double>(Span<const double>, Span<double>, double, std::uint64_t, std::uint32_t,
                            Counter*, TensorForm);

}  // namespace gpurelay::host
