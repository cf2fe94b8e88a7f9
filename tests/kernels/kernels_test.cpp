// The host twins of A, B and C against the formulas written out independently here.
#include "kernels/kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/formula.hpp"
#include "kernels/kernels_host.hpp"
#include "runtime/host_stream.hpp"

namespace gpurelay {
namespace {

// docs/OUTPUT.md's formula, spelled out with explicit 32-bit wrapping.
double reference_x(std::uint64_t step, std::uint32_t i, std::uint32_t seed) {
    const std::uint32_t u =
        static_cast<std::uint32_t>(i * 2654435761ull) ^
        static_cast<std::uint32_t>(static_cast<std::uint32_t>(step) * 2654435769ull + seed);
    return std::ldexp(static_cast<double>(u >> 8), -24);
}

TEST(KernelA, MatchesTheFormulaExactlyInBothTypes) {
    std::vector<float> xf(1000);
    std::vector<double> xd(1000);
    host::run_a(Span<float>{xf.data(), xf.size()}, 7, 12345);
    host::run_a(Span<double>{xd.data(), xd.size()}, 7, 12345);
    for (std::uint32_t i = 0; i < 1000; ++i) {
        ASSERT_EQ(static_cast<double>(xf[i]), reference_x(7, i, 12345)) << i;
        ASSERT_EQ(xd[i], reference_x(7, i, 12345)) << i;
        ASSERT_GE(xd[i], 0.0);
        ASSERT_LT(xd[i], 1.0);
    }
}

TEST(KernelA, DiffersBetweenStepsAndSeeds) {
    int same_step = 0, same_seed = 0, same_low_bits = 0;
    for (std::uint32_t i = 0; i < 1000; ++i) {
        same_step += a_value<double>(1, i, 5) == a_value<double>(2, i, 5);
        same_seed += a_value<double>(1, i, 5) == a_value<double>(1, i, 5 + 256);
        // u >> 8 drops the low 8 bits, so seeds that differ only there give the same tensor
        // (docs/OUTPUT.md says so).
        same_low_bits += a_value<double>(1, i, 5) == a_value<double>(1, i, 6);
    }
    EXPECT_LT(same_step, 5);
    EXPECT_LT(same_seed, 5);
    EXPECT_EQ(same_low_bits, 1000);
}

// --- All-reduce shares: the rank folded into A, and sums that stay exact -----------------------

TEST(TensorForm, TheDefaultFormIsAsFormula) {
    for (std::uint32_t i = 0; i < 1000; ++i) {
        ASSERT_EQ(form_value<double>(3, i, 77, TensorForm{}), a_value<double>(3, i, 77)) << i;
        ASSERT_EQ(form_value<float>(3, i, 77, TensorForm{}), a_value<float>(3, i, 77)) << i;
    }
}

// Rank r's share, written out from docs/OUTPUT.md: ((u >> 8) >> 9) + r, times 2^-24.
double reference_share(std::uint64_t step, std::uint32_t i, std::uint32_t seed, int r) {
    const double bits = std::ldexp(reference_x(step, i, seed), 24);  // u >> 8, exactly
    return std::ldexp(std::floor(bits / 512.0) + r, -24);
}

// Sums `values` in float32 three ways: forwards, backwards and as a pairwise tree (the orders a
// ring, a reversed ring and a tree all-reduce use).
std::vector<float> float_sums(const std::vector<float>& values) {
    float forwards = 0, backwards = 0;
    for (float v : values) forwards += v;
    for (auto it = values.rbegin(); it != values.rend(); ++it) backwards += *it;
    std::vector<float> level = values;
    while (level.size() > 1) {
        std::vector<float> next;
        for (std::size_t k = 0; k + 1 < level.size(); k += 2)
            next.push_back(level[k] + level[k + 1]);
        if (level.size() % 2 == 1) next.push_back(level.back());
        level = next;
    }
    return {forwards, backwards, level.front()};
}

TEST(TensorForm, SharesFoldTheRankInAndSumExactlyInAnyOrder) {
    for (const int n : {1, 2, 3, 4, 7, 64, kMaxAllreduceGroup}) {
        for (std::uint32_t i = 0; i < 200; ++i) {
            std::vector<float> shares;
            double exact = 0;
            for (int r = 0; r < n; ++r) {
                const float share = form_value<float>(5, i, 9, allreduce_share(r));
                ASSERT_EQ(static_cast<double>(share), reference_share(5, i, 9, r)) << n << " " << r;
                ASSERT_EQ(form_value<double>(5, i, 9, allreduce_share(r)),
                          reference_share(5, i, 9, r));
                shares.push_back(share);
                exact += reference_share(5, i, 9, r);
            }
            const float expected = form_value<float>(5, i, 9, allreduce_sum(n));
            ASSERT_EQ(static_cast<double>(expected), exact) << "n " << n << " element " << i;
            ASSERT_EQ(form_value<double>(5, i, 9, allreduce_sum(n)), exact);
            for (const float sum : float_sums(shares)) ASSERT_EQ(sum, expected) << n << " " << i;
        }
    }
}

// The worst case the bound allows: kMaxAllreduceGroup shares each at their largest value still
// sum exactly in float32. One bit fewer dropped (kShareShift - 1) would not leave that room.
TEST(TensorForm, TheGroupBoundHoldsInTheWorstCase) {
    const auto worst_sum = [](int shift) {
        const double largest_bits = std::ldexp(1.0, 24 - shift) - 1;
        double sum = 0;
        for (int r = 0; r < kMaxAllreduceGroup; ++r) sum += largest_bits + r;
        return sum;  // in units of 2^-24
    };
    const double largest_bits = std::ldexp(1.0, 24 - static_cast<int>(kShareShift)) - 1;
    std::vector<float> shares;
    for (int r = 0; r < kMaxAllreduceGroup; ++r) {
        shares.push_back(static_cast<float>(std::ldexp(largest_bits + r, -24)));
    }
    const double exact = std::ldexp(worst_sum(static_cast<int>(kShareShift)), -24);
    ASSERT_LT(worst_sum(static_cast<int>(kShareShift)), std::ldexp(1.0, 24));
    for (const float sum : float_sums(shares)) EXPECT_EQ(static_cast<double>(sum), exact);
    EXPECT_GT(worst_sum(static_cast<int>(kShareShift) - 1), std::ldexp(1.0, 24));
}

TEST(KernelB, ChecksAnAllreduceSumAndCatchesAMissingShare) {
    constexpr int kRanks = 4;
    const std::size_t n = 777;
    std::vector<float> sum(n, 0.0f), share(n), y(n);
    for (int r = 0; r < kRanks; ++r) {
        host::run_a(Span<float>{share.data(), n}, 2, 31, allreduce_share(r));
        for (std::size_t i = 0; i < n; ++i) sum[i] += share[i];
    }
    Counter bad = 0;
    host::run_b(Span<const float>{sum.data(), n}, Span<float>{y.data(), n}, 2.0f, 2, 31, &bad,
                allreduce_sum(kRanks));
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 2, 31, n, allreduce_sum(kRanks)),
              0u);
    // Read as a group of 3 (rank 3's share missing), or as one tensor: nearly all wrong.
    host::run_b(Span<const float>{sum.data(), n}, Span<float>{y.data(), n}, 2.0f, 2, 31, &bad,
                allreduce_sum(kRanks - 1));
    EXPECT_EQ(bad, n);
    bad = 0;
    host::run_b(Span<const float>{sum.data(), n}, Span<float>{y.data(), n}, 2.0f, 2, 31, &bad);
    EXPECT_GT(bad, n - 5);
}

// A relay: each stage's B is the next stage's x. Stage k checks against A after k - 1 products,
// rounded one at a time, so the check holds bit for bit for an alpha that rounds; with a power of
// two, the last stage's y is exactly alpha^(n-1) times A's output.
TEST(KernelB, ChecksARelaysStagesAndCatchesAMissingHop) {
    const std::size_t n = 999;
    for (const double alpha : {2.0, 0.37}) {
        std::vector<float> x(n), y(n);
        host::run_a(Span<float>{x.data(), n}, 6, 17);
        for (int stage = 1; stage <= 4; ++stage) {
            Counter bad = 0;
            host::run_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n},
                        static_cast<float>(alpha), 6, 17, &bad, relay_received(stage, alpha));
            EXPECT_EQ(bad, 0u) << "stage " << stage << ", alpha " << alpha;
            // Read as a stage one hop earlier: every nonzero element is wrong.
            bad = 0;
            host::run_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n},
                        static_cast<float>(alpha), 6, 17, &bad, relay_received(stage + 1, alpha));
            EXPECT_GT(bad, n - 5) << "stage " << stage;
            x = y;
        }
        if (alpha == 2.0) {
            for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 16.0f * a_value<float>(6, i, 17));
        }
    }
}

TEST(KernelB, ScalesAndCountsWrongInputs) {
    const std::size_t n = 513;
    std::vector<float> x(n), y(n, -1.0f);
    host::run_a(Span<float>{x.data(), n}, 3, 9);
    x[0] = 0.123f;
    x[100] = std::numeric_limits<float>::quiet_NaN();
    Counter bad = 0;
    host::run_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n}, 2.5f, 3, 9, &bad);
    EXPECT_EQ(bad, 2u);
    for (std::uint32_t i = 1; i < n; ++i) {
        if (i == 100) continue;
        ASSERT_EQ(y[i], static_cast<float>(2.5 * reference_x(3, i, 9))) << i;
    }
    // B adds to the count it is given (the CUDA kernel's blocks each add theirs).
    host::run_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n}, 2.5f, 3, 9, &bad);
    EXPECT_EQ(bad, 4u);
}

TEST(KernelB, ChecksAgainstTheStepItWasGiven) {
    std::vector<double> x(64), y(64);
    host::run_a(Span<double>{x.data(), 64}, 4, 1);
    Counter bad = 0;
    host::run_b(Span<const double>{x.data(), 64}, Span<double>{y.data(), 64}, 2.0, 5, 1, &bad);
    EXPECT_GT(bad, 60u);  // step 4's data read as step 5's: a stale slot is caught
}

TEST(KernelC, ClosedFormMatchesIteration) {
    for (std::uint32_t iterations : {0u, 1u, 2u, 3u, 64u, 1000u, 65537u}) {
        const AffineMap jump = lcg_jump(iterations);
        for (std::uint32_t i = 0; i < 50; ++i) {
            ASSERT_EQ(c_expected(jump, 11, i, 3), c_iterate(c_start(11, i, 3), iterations))
                << iterations << " " << i;
        }
    }
}

TEST(KernelC, VerifyCountsCorruptedElements) {
    std::vector<std::uint32_t> z(300);
    host::run_c(Span<std::uint32_t>{z.data(), z.size()}, 2, 77, 40);
    Counter bad = 0;
    host::run_verify_c(Span<const std::uint32_t>{z.data(), z.size()}, 2, 77, 40, &bad);
    EXPECT_EQ(bad, 0u);
    z[17] ^= 1u;
    z[299] += 1u;
    host::run_verify_c(Span<const std::uint32_t>{z.data(), z.size()}, 2, 77, 40, &bad);
    EXPECT_EQ(bad, 2u);
    host::run_verify_c(Span<const std::uint32_t>{z.data(), z.size()}, 2, 77, 40, &bad);
    EXPECT_EQ(bad, 4u);  // added to what the count held
}

TEST(SpotCheck, FindsAWrongSampleAndCoversBothEnds) {
    const std::size_t n = 10000;
    std::vector<float> x(n), y(n);
    host::run_a(Span<float>{x.data(), n}, 0, 2);
    Counter unused = 0;
    host::run_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n}, 2.0f, 0, 2, &unused);
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 0, 2, 100), 0u);
    y[n - 1] = -1.0f;
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 0, 2, 100), 1u);
    y[0] = -1.0f;
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 0, 2, 100), 2u);
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 0, 2, n), 2u);
}

// StepArg holds the value, or the word, which it reads when asked (on the device, when the
// kernel runs), not when it is made: a graph replayed for many steps changes the word between
// launches.
TEST(StepArg, ReadsTheValueOrTheWordWhenAsked) {
    std::uint64_t word = 7;
    const StepArg from_word(&word);
    const StepArg from_value(std::uint64_t{5});
    EXPECT_EQ(from_value.read(), 5u);
    EXPECT_EQ(from_word.read(), 7u);
    word = 9;
    EXPECT_EQ(from_word.read(), 9u);
    EXPECT_EQ(from_value.read(), 5u);
    EXPECT_EQ(StepArg(std::uint64_t{5}).read(), 5u);
    EXPECT_EQ(StepArg(&word).read(), 9u);
    // A word and an offset: the cycle's first step in the word, the launch's place in the cycle.
    const StepArg in_cycle(&word, 3);
    EXPECT_EQ(in_cycle.read(), 12u);
    word = 16;
    EXPECT_EQ(in_cycle.read(), 19u);
}

// A launch given a step word reads the step when the stream runs it, not when it is queued: what
// a replayed graph relies on (the host twin stands in for the CUDA kernel here).
TEST(StepWord, ReadWhenTheWorkRuns) {
    HostStream stream;
    std::uint64_t word = 0;
    const std::size_t n = 1001;
    std::vector<float> x(n), y(n);
    std::vector<std::uint32_t> z(300);
    Counter bad[2] = {0, 0};
    stream.enqueue([&word] { word = 9; });
    launch_a(Span<float>{x.data(), n}, &word, 4, stream);
    launch_b(Span<const float>{x.data(), n}, Span<float>{y.data(), n}, 2.0f, &word, 4, &bad[0],
             stream);
    launch_c(Span<std::uint32_t>{z.data(), z.size()}, &word, 4, 16, stream);
    launch_verify_c(Span<const std::uint32_t>{z.data(), z.size()}, &word, 4, 16, &bad[1], stream);
    stream.synchronize();
    EXPECT_EQ(bad[0], 0u);
    EXPECT_EQ(bad[1], 0u);
    EXPECT_EQ(spot_check_y(Span<const float>{y.data(), n}, 2.0f, 9, 4, n), 0u);
    Counter stale = 0;
    host::run_verify_c(Span<const std::uint32_t>{z.data(), z.size()}, 0, 4, 16, &stale);
    EXPECT_GT(stale, 250u);  // C ran as step 9, not as step 0 (the word when queued)
}

}  // namespace
}  // namespace gpurelay
