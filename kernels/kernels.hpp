// Kernels A, B and C and their checks. Each call queues the work on `stream` and returns: on a
// CUDA stream it launches the kernel, on a host stream the host twin runs in the stream's order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/formula.hpp"
#include "runtime/span.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

using Counter = unsigned long long;

// The step a launch works on: the value itself, or a word in device memory plus an offset, read
// when the kernel (or on a host stream its twin) runs, not when it is queued: a captured graph
// replays one launch for many steps, the word holding the first step of the current cycle of
// graphs and the offset the launch's place in it.
class StepArg {
  public:
    StepArg(std::uint64_t value) : value_(value) {}      // NOLINT(google-explicit-constructor)
    StepArg(const std::uint64_t* word) : word_(word) {}  // NOLINT(google-explicit-constructor)
    StepArg(const std::uint64_t* word, std::uint64_t offset) : value_(offset), word_(word) {}

    GPURELAY_HD std::uint64_t read() const { return word_ != nullptr ? *word_ + value_ : value_; }

  private:
    std::uint64_t value_ = 0;  // the step, or with a word the offset from it
    const std::uint64_t* word_ = nullptr;
};
static_assert(std::is_trivially_copyable_v<StepArg>, "passed by value to CUDA kernels");

// A: x[i] = form_value(step, i, seed, form).
template <typename T>
void launch_a(Span<T> x, StepArg step, std::uint32_t seed, Stream& stream, TensorForm form = {});
// B: y[i] = alpha * x[i], adding to *x_mismatches how many x[i] differ from A's formula in form
// `expected` (verification fused into B: one read of x, one write of y).
template <typename T>
void launch_b(Span<const T> x, Span<T> y, T alpha, StepArg step, std::uint32_t seed,
              Counter* x_mismatches, Stream& stream, TensorForm expected = {});
// C: z[i] = c_iterate(c_start(step, i, seed), iterations), independent of x and y; and its check,
// adding to *z_mismatches how many z[i] differ from C's closed form.
void launch_c(Span<std::uint32_t> z, StepArg step, std::uint32_t seed, std::uint32_t iterations,
              Stream& stream);
void launch_verify_c(Span<const std::uint32_t> z, StepArg step, std::uint32_t seed,
                     std::uint32_t iterations, Counter* z_mismatches, Stream& stream);

// Host reference, run now on the calling thread: mismatches of y against alpha * A's formula
// (in form `expected`) at `samples` indices spread over y (all of them when samples >= y.size()).
template <typename T>
std::uint64_t spot_check_y(Span<const T> y, T alpha, std::uint64_t step, std::uint32_t seed,
                           std::uint64_t samples, TensorForm expected = {});

}  // namespace gpurelay
