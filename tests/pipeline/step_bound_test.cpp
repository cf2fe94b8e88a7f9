// The step bound against hand-worked schedules of the streams.
#include "pipeline/step_bound.hpp"

#include <gtest/gtest.h>

namespace gpurelay {
namespace {

TEST(StepBound, OverlapOffSerialisesTheConsumer) {
    // Consumer: recv 4, C 3, B 2 on one stream = 9; producer: A 1 + send 4 = 5.
    EXPECT_DOUBLE_EQ(step_bound_ms({1, 4, 3, 2}, 2, false), 9.0);
    EXPECT_DOUBLE_EQ(step_bound_ms({1, 4, 3, 2}, 1, false), 9.0);
}

TEST(StepBound, OverlapHidesTheTransferBehindC) {
    // depth 2: the compute stream's C + B = 5 against the producer's A + transfer = 5.
    EXPECT_DOUBLE_EQ(step_bound_ms({1, 4, 3, 2}, 2, true), 5.0);
    // depth 1: the receive waits for B, C runs beside it: max(4, 3) + 2 = 6.
    EXPECT_DOUBLE_EQ(step_bound_ms({1, 4, 3, 2}, 1, true), 6.0);
    // More slots change nothing once the receive has its own stream.
    EXPECT_DOUBLE_EQ(step_bound_ms({1, 4, 3, 2}, 4, true), 5.0);
}

TEST(StepBound, ASlowProducerSetsThePace) {
    // A 10 + transfer 1 = 11 beats every consumer chain.
    for (const bool overlap : {false, true}) {
        for (const std::int64_t depth : {1, 2, 4}) {
            EXPECT_DOUBLE_EQ(step_bound_ms({10, 1, 2, 3}, depth, overlap), 11.0)
                << "overlap " << overlap << " depth " << depth;
        }
    }
}

TEST(StepBound, ALongCIsNotHiddenByDepth) {
    // C 8 dominates: depth 2 overlapped = C + B = 10; depth 1 = max(1, 8) + 2 = 10; off 11.
    EXPECT_DOUBLE_EQ(step_bound_ms({0.5, 1, 8, 2}, 2, true), 10.0);
    EXPECT_DOUBLE_EQ(step_bound_ms({0.5, 1, 8, 2}, 1, true), 10.0);
    EXPECT_DOUBLE_EQ(step_bound_ms({0.5, 1, 8, 2}, 2, false), 11.0);
}

TEST(StepBound, FormulaNamesTheChains) {
    EXPECT_EQ(step_bound_formula(2, false), "max(A + transfer, transfer + C + B)");
    EXPECT_EQ(step_bound_formula(1, true), "max(A + transfer, max(transfer, C) + B)");
    EXPECT_EQ(step_bound_formula(4, true), "max(A + transfer, C + B)");
}

}  // namespace
}  // namespace gpurelay
