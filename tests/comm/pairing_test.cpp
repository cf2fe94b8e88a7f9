// Pairing: which rank produces for which, and whether every pair is on one node (ipc's need).
#include "comm/pairing.hpp"

#include <gtest/gtest.h>

namespace gpurelay {
namespace {

TEST(Pairing, AdjacentAndSplitPairs) {
    const PairPlacement adjacent = place_pairs(3, 4, false);
    EXPECT_EQ(adjacent.role, Role::consumer);
    EXPECT_EQ(adjacent.peer, 2);
    const PairPlacement split = place_pairs(3, 4, true);
    EXPECT_EQ(split.role, Role::consumer);
    EXPECT_EQ(split.peer, 1);
    EXPECT_EQ(place_pairs(0, 1, false).role, Role::both);
}

TEST(Pairing, PairsOnOneNode) {
    // Two nodes, two ranks each (block placement): adjacent pairs stay on a node, split ones
    // cross.
    const std::vector<std::string> two_nodes = {"a", "a", "b", "b"};
    EXPECT_TRUE(pairs_on_one_node(two_nodes, false));
    EXPECT_FALSE(pairs_on_one_node(two_nodes, true));
    // Round-robin placement: adjacent pairs cross.
    EXPECT_FALSE(pairs_on_one_node({"a", "b", "a", "b"}, false));
    EXPECT_TRUE(pairs_on_one_node({"a", "b", "a", "b"}, true));
    EXPECT_TRUE(pairs_on_one_node({"a"}, false));
}

}  // namespace
}  // namespace gpurelay
