// Which rank produces for which: pairs, roles, each process's GPU, each pair's communicator.
#pragma once

#include <mpi.h>

#include <string_view>

namespace gpurelay {

// `relay`: a relay's middle stage, the consumer of the link before it and the producer on the
// link after it (B's y is what it sends on).
enum class Role { producer, consumer, both, relay };

enum class Collective { broadcast, allreduce };

// Where a rank stands. For a collective, `pairs` and `pair` count and number the consuming ranks,
// each with its row of /y and of the mismatch counts.
struct PairPlacement {
    int pairs = 1;
    int pair = 0;  // this rank's pair (for a collective, its row as a consumer)
    Role role = Role::both;
    int peer = 0;      // world rank of the other side (itself when role is both; a group's root)
    int producer = 0;  // world ranks of the pair's two sides
    int consumer = 0;
    int groups = 1;  // collectives: how many groups, this rank's, and its rank in it
    int group = 0;
    int group_rank = 0;
    int group_size = 1;
};

// One rank runs both roles; otherwise the world size must be even (a usage error). Adjacent pairs
// rank 2k with 2k+1 (same node under block placement); split pairs rank k with k + size/2.
PairPlacement place_pairs(int world_rank, int world_size, bool split);

// Groups of `group_size` consecutive ranks. Broadcast: each group's rank 0 produces (and consumes
// in a group of one), the others consume. All-reduce: every rank plays both roles. A usage error
// when an all-reduce group is too large for exact sums (`max_allreduce_group`, kernels/formula.hpp;
// checked first, so it is said on any world), or group_size does not divide the world.
PairPlacement place_groups(int world_rank, int world_size, int group_size, Collective op,
                           int max_allreduce_group);

// A relay through groups of `group_size` consecutive ranks: group rank k is stage k; `producer`
// and `consumer` are the stages before and after (itself at the ends); the receiving stages each
// have a row. A usage error for a relay of one rank, or when group_size does not divide the world.
PairPlacement place_relay(int world_rank, int world_size, int group_size);
// The stage of a rank placed by place_relay, and the pair placement of one of its links, or of a
// pair (over a communicator of just the two ranks: the sender is rank 0, the receiver rank 1).
inline int relay_stage(const PairPlacement& p) { return p.group_rank; }
PairPlacement relay_link(bool outbound);

// A communicator of `sender` (rank 0) and `receiver` (rank 1), collective over the two only, so it
// costs the same at any world size. A relay stage makes its links in link order (no deadlock).
MPI_Comm open_link_comm(int sender, int receiver);

// nccl-tests' busbw / algbw: 1 for a broadcast, 2(n-1)/n for an all-reduce.
double bus_factor(Collective op, int ranks);

// The GPU this process drives among `visible` ones: its node-local rank modulo what it sees, so
// `srun --gpus-per-task=1` (one visible each) and one-GPU-per-rank launches both work.
int select_gpu(int local_rank, int visible);

std::string_view to_string(Role role);
std::string_view to_string(Collective op);

}  // namespace gpurelay
