#include "kernels/kernels_host.hpp"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "kernels/formula.hpp"
#include "kernels/handoff_protocol.hpp"

namespace gpurelay::host {
namespace {

std::size_t end_of(Share share, std::size_t n) { return std::min(share.end, n); }

// One host thread's team, a whole block (handoff_protocol.hpp), and its share of A's and B's
// values.
struct HostHands {
    std::uint32_t index = 0, blocks = 1;

    bool is_leader() const { return true; }
    std::uint32_t block() const { return index; }
    void sync_block() const {}
    std::uint32_t broadcast_from_leader(std::uint32_t value) const { return value; }
    // This block's share of n values: a contiguous range, as even as it gets.
    Share share(std::size_t n) const { return {n * index / blocks, n * (index + 1) / blocks}; }
    template <typename T>
    void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form) const {
        host::run_a(x, step, seed, form, share(x.size()));
    }
    template <typename T>
    void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
               TensorForm expected, Counter* x_mismatches) const {
        host::run_b(x, y, alpha, step, seed, x_mismatches, expected, share(x.size()));
    }
};

}  // namespace

template <typename T>
void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form, Share share) {
    for (std::size_t i = share.begin; i < end_of(share, x.size()); ++i) {
        x[i] = form_value<T>(step, static_cast<std::uint32_t>(i), seed, form);
    }
}

template <typename T>
void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
           Counter* x_mismatches, TensorForm expected, Share share) {
    Counter bad = 0;
    for (std::size_t i = share.begin; i < end_of(share, x.size()); ++i) {
        const T xi = x[i];
        bad += xi != form_value<T>(step, static_cast<std::uint32_t>(i), seed, expected);
        y[i] = b_value(alpha, xi);
    }
    if (bad != 0) std::atomic_ref(*x_mismatches).fetch_add(bad, std::memory_order_relaxed);
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

// Every block's waits are bounded, so the join is too.
template <class Args>
void run_role(const Args& args) {
    const std::uint32_t blocks = args.role.blocks;
    const auto run_block = [&args, blocks](std::uint32_t b) {
        HostHands hands{b, blocks};
        SlotFlags flags{};  // the first block's own copy
        handoff::run_role(hands, args, flags);
    };
    std::vector<std::thread> others;
    for (std::uint32_t b = 1; b < blocks; ++b) others.emplace_back(run_block, b);
    run_block(0);
    for (std::thread& other : others) other.join();
}

template void run_a<float>(Span<float>, std::uint64_t, std::uint32_t, TensorForm, Share);
template void run_a<double>(Span<double>, std::uint64_t, std::uint32_t, TensorForm, Share);
template void run_b<float>(Span<const float>, Span<float>, float, std::uint64_t, std::uint32_t,
                           Counter*, TensorForm, Share);
template void run_b<double>(Span<const double>, Span<double>, double, std::uint64_t, std::uint32_t,
                            Counter*, TensorForm, Share);
template void run_role(const ProducerArgs<float>&);
template void run_role(const ProducerArgs<double>&);
template void run_role(const ConsumerArgs<float>&);
template void run_role(const ConsumerArgs<double>&);

}  // namespace gpurelay::host
