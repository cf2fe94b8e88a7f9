// Pairing: which rank produces for which, and whether every pair is on one node (ipc's need).
#include "comm/pairing.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

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

// Broadcast groups: each group's rank 0 produces, the others consume and are numbered group by
// group (the rows of /y); a group of one consumes its own tensor.
TEST(Groups, BroadcastRootsAndReceivers) {
    std::vector<int> rows;
    for (int rank = 0; rank < 6; ++rank) {
        const PairPlacement p = place_groups(rank, 6, 3, Collective::broadcast, 256);
        EXPECT_EQ(p.groups, 2);
        EXPECT_EQ(p.group, rank / 3);
        EXPECT_EQ(p.group_rank, rank % 3);
        EXPECT_EQ(p.peer, rank / 3 * 3) << "the root";
        EXPECT_EQ(p.pairs, 4) << "2 groups of 2 receivers";
        EXPECT_EQ(p.role, rank % 3 == 0 ? Role::producer : Role::consumer) << rank;
        if (p.role == Role::consumer) rows.push_back(p.pair);
    }
    EXPECT_EQ(rows, (std::vector<int>{0, 1, 2, 3}));
    const PairPlacement alone = place_groups(2, 4, 1, Collective::broadcast, 256);
    EXPECT_EQ(alone.role, Role::both);
    EXPECT_EQ(alone.pairs, 4);
    EXPECT_EQ(alone.pair, 2);
}

// All-reduce: every rank produces and consumes, and is its own row.
TEST(Groups, AllreduceRanksPlayBothRoles) {
    for (int rank = 0; rank < 4; ++rank) {
        const PairPlacement p = place_groups(rank, 4, 2, Collective::allreduce, 256);
        EXPECT_EQ(p.role, Role::both);
        EXPECT_EQ(p.pairs, 4);
        EXPECT_EQ(p.pair, rank);
        EXPECT_EQ(p.group, rank / 2);
        EXPECT_EQ(p.group_rank, rank % 2);
        EXPECT_EQ(p.group_size, 2);
    }
}

TEST(Groups, RefusesGroupsThatDoNotDivideOrSumInexactly) {
    const auto message = [](auto call) {
        try {
            call();
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message([] { place_groups(0, 6, 4, Collective::broadcast, 256); }),
              "group_size = 4 does not divide the 6 ranks into groups of one size");
    EXPECT_EQ(message([] { place_groups(0, 6, 0, Collective::allreduce, 256); }),
              "group_size = 0 does not divide the 6 ranks into groups of one size");
    EXPECT_EQ(message([] { place_groups(0, 2, 512, Collective::allreduce, 256); }),
              "group_size = 512 is too large for an all-reduce whose sums are exact: at most 256 "
              "ranks a group");
    EXPECT_EQ(message([] { place_groups(0, 512, 512, Collective::broadcast, 256); }), "no error");
}

}  // namespace
}  // namespace gpurelay
