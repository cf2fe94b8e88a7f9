// Pairing: which rank produces for which, and whether every pair is on one node (ipc's need).
#include "mpi/pairing.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gpurelay {
namespace {

// What `call` throws, or "no error".
template <typename Call>
std::string message(Call call) {
    try {
        call();
    } catch (const std::exception& e) {
        return std::string(e.what());
    }
    return std::string("no error");
}

TEST(Pairing, AdjacentAndSplitPairs) {
    const PairPlacement adjacent = place_pairs(3, 4, false);
    EXPECT_EQ(adjacent.role, Role::consumer);
    EXPECT_EQ(adjacent.peer, 2);
    const PairPlacement split = place_pairs(3, 4, true);
    EXPECT_EQ(split.role, Role::consumer);
    EXPECT_EQ(split.peer, 1);
    EXPECT_EQ(place_pairs(0, 1, false).role, Role::both);
}

// Every rank of six: adjacent pairs 2k with 2k + 1, split pairs k with k + 3, each numbered by
// its producer; an odd world has no pairs.
TEST(Pairing, EveryRanksPairRoleAndPeer) {
    for (const bool split : {false, true}) {
        for (int rank = 0; rank < 6; ++rank) {
            const PairPlacement p = place_pairs(rank, 6, split);
            const int pair = split ? rank % 3 : rank / 2;
            const bool produces = split ? rank < 3 : rank % 2 == 0;
            EXPECT_EQ(p.pairs, 3);
            EXPECT_EQ(p.pair, pair) << "rank " << rank << (split ? " split" : "");
            EXPECT_EQ(p.producer, split ? pair : 2 * pair) << "rank " << rank;
            EXPECT_EQ(p.consumer, split ? pair + 3 : 2 * pair + 1) << "rank " << rank;
            EXPECT_EQ(p.role, produces ? Role::producer : Role::consumer) << "rank " << rank;
            EXPECT_EQ(p.peer, produces ? p.consumer : p.producer) << "rank " << rank;
        }
    }
    EXPECT_EQ(message([] { place_pairs(0, 3, false); }),
              "gpurelay needs one rank or an even number of ranks (producer/consumer pairs), "
              "got 3");
}

// A rank drives its node-local rank's GPU, modulo the GPUs it sees; none without any.
TEST(Pairing, EachRankSelectsAGpuItSees) {
    EXPECT_EQ(select_gpu(0, 4), 0);
    EXPECT_EQ(select_gpu(5, 4), 1);
    EXPECT_EQ(select_gpu(3, 1), 0);
    EXPECT_EQ(select_gpu(2, 0), -1);
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
        EXPECT_EQ(p.consumer, rank % 3 == 0 ? rank + 1 : rank) << rank;
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
    EXPECT_EQ(message([] { place_groups(0, 6, 4, Collective::broadcast, 256); }),
              "group_size = 4 does not divide the 6 ranks into groups of one size");
    EXPECT_EQ(message([] { place_groups(0, 6, 0, Collective::allreduce, 256); }),
              "group_size = 0 does not divide the 6 ranks into groups of one size");
    EXPECT_EQ(message([] { place_groups(0, 2, 512, Collective::allreduce, 256); }),
              "group_size = 512 is too large for an all-reduce whose sums are exact: at most 256 "
              "ranks a group");
    EXPECT_EQ(message([] { place_groups(0, 512, 512, Collective::broadcast, 256); }), "no error");
}

// A relay: each group's ranks are its stages in order; each stage names the one before and the one
// after it, and the receiving stages are the rows.
TEST(Relay, StagesInOrderAndTheirHops) {
    std::vector<Role> roles;
    for (int rank = 0; rank < 8; ++rank) {
        const PairPlacement p = place_relay(rank, 8, 4);
        roles.push_back(p.role);
        EXPECT_EQ(p.groups, 2);
        EXPECT_EQ(p.pairs, 6) << "2 groups of 3 receiving stages";
        EXPECT_EQ(relay_stage(p), rank % 4);
        if (relay_stage(p) == 0) continue;
        EXPECT_EQ(p.producer, rank - 1);
        EXPECT_EQ(p.peer, rank - 1);
        EXPECT_EQ(p.pair, rank / 4 * 3 + rank % 4 - 1);
    }
    EXPECT_EQ(place_relay(5, 8, 4).consumer, 6);
    EXPECT_EQ(place_relay(0, 8, 4).peer, 1);
    const std::vector<Role> line = {Role::producer, Role::relay, Role::relay, Role::consumer};
    EXPECT_EQ(std::vector<Role>(roles.begin(), roles.begin() + 4), line);
    EXPECT_EQ(std::vector<Role>(roles.begin() + 4, roles.end()), line);
    EXPECT_EQ(place_relay(1, 2, 2).role, Role::consumer);
    EXPECT_EQ(relay_link(true).peer, 1);
    EXPECT_EQ(relay_link(false).role, Role::consumer);
}

TEST(Relay, RefusesOneRankAndGroupsThatDoNotDivide) {
    EXPECT_NE(message([] { place_relay(0, 1, 1); }).find("a relay of 1 rank"), std::string::npos);
    EXPECT_NE(message([] { place_relay(0, 4, 1); }).find("a relay of 1 rank"), std::string::npos);
    EXPECT_EQ(message([] { place_relay(0, 6, 4); }),
              "group_size = 4 does not divide the 6 ranks into relays of one length");
}

}  // namespace
}  // namespace gpurelay
