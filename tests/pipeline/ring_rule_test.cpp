// The step timer's ring rule: the ring's size against hand-worked cases, the fewest slots that meet
// every clause, and the check that names the clause a ring breaks.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "pipeline/step_timer.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

PipelineSpec spec_of(std::int64_t depth, bool graphs = false, std::int64_t graph_steps = 1) {
    PipelineSpec spec;
    spec.depth = depth;
    spec.graphs = graphs;
    spec.graph_steps = graph_steps;
    return spec;
}

// The check's message for `ring` slots, or "" when the ring meets the rule.
std::string broken_clause(const PipelineSpec& spec, std::size_t ring) {
    try {
        check_timing_ring(spec, ring);
    } catch (const Error& error) {
        return error.what();
    }
    return "";
}

TEST(RingRule, RetireGroupsHoldFourStepsOrWholeGraphs) {
    EXPECT_EQ(retire_group_steps(spec_of(2)), 4);
    EXPECT_EQ(retire_group_steps(spec_of(2, true, 1)), 4);
    EXPECT_EQ(retire_group_steps(spec_of(2, true, 2)), 4);
    EXPECT_EQ(retire_group_steps(spec_of(3, true, 3)), 6);  // the fewest graphs that hold 4
    EXPECT_EQ(retire_group_steps(spec_of(1, true, 16)), 16);
}

TEST(RingRule, EagerStepsNeedDepthPlusOnePlusAGroup) {
    EXPECT_EQ(timing_ring_size(spec_of(1)), 6u);
    EXPECT_EQ(timing_ring_size(spec_of(3)), 8u);
    EXPECT_EQ(timing_ring_size(spec_of(64)), 69u);
}

TEST(RingRule, GraphsNeedSixteenThreeGroupsAndWholeSlotsAndGraphs) {
    EXPECT_EQ(timing_ring_size(spec_of(1, true, 1)), 16u);   // at least 16
    EXPECT_EQ(timing_ring_size(spec_of(2, true, 2)), 16u);   // 16, a multiple of 2
    EXPECT_EQ(timing_ring_size(spec_of(3, true, 1)), 18u);   // 16 rounded up to a multiple of 3
    EXPECT_EQ(timing_ring_size(spec_of(3, true, 6)), 18u);   // 3C = 18, a multiple of 3 and 6
    EXPECT_EQ(timing_ring_size(spec_of(1, true, 5)), 20u);   // 16 rounded up to a multiple of 5
    EXPECT_EQ(timing_ring_size(spec_of(1, true, 16)), 48u);  // 3C with C = 16
    EXPECT_EQ(timing_ring_size(spec_of(20, true, 1)), 40u);  // depth + 1 + C = 25, then 2 x 20
}

// Every depth and graph length the configuration allows (G = 1 or a multiple of depth): the ring
// meets the rule, and one slot fewer, or any smaller ring, does not.
TEST(RingRule, TheRingIsTheFewestSlotsThatMeetTheRule) {
    for (std::int64_t depth = 1; depth <= 8; ++depth) {
        for (std::int64_t g = 1; g <= 32; ++g) {
            if (g > 1 && g % depth != 0) continue;
            for (const bool graphs : {false, true}) {
                if (!graphs && g > 1) continue;
                const PipelineSpec spec = spec_of(depth, graphs, g);
                const std::size_t ring = timing_ring_size(spec);
                EXPECT_EQ(broken_clause(spec, ring), "") << "depth " << depth << " G " << g;
                for (std::size_t fewer = 1; fewer < ring; ++fewer) {
                    EXPECT_NE(broken_clause(spec, fewer), "")
                        << "depth " << depth << " G " << g << " ring " << fewer;
                }
            }
        }
    }
}

TEST(RingRule, TheCheckNamesTheClauseARingBreaks) {
    EXPECT_EQ(broken_clause(spec_of(2), 6),
              "step timer: a ring of 6 slots breaks the ring rule: at least depth + 1 + C (7)");
    EXPECT_EQ(broken_clause(spec_of(2), 7), "");
    EXPECT_EQ(broken_clause(spec_of(2), 9), "");  // eager steps need no multiple
    EXPECT_EQ(broken_clause(spec_of(3, true, 1), 17),
              "step timer: a ring of 17 slots breaks the ring rule: a multiple of depth (3)");
    EXPECT_EQ(broken_clause(spec_of(3, true, 6), 21),
              "step timer: a ring of 21 slots breaks the ring rule: a multiple of graph_steps (6)");
    EXPECT_EQ(broken_clause(spec_of(1, true, 16), 32),
              "step timer: a ring of 32 slots breaks the ring rule: at least 3 x C (48)");
    EXPECT_EQ(broken_clause(spec_of(2, true, 1), 14),
              "step timer: a ring of 14 slots breaks the ring rule: at least 16 (16)");
}

}  // namespace
}  // namespace gpurelay
