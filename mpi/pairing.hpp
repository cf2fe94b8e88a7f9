// Which rank produces for which: pairs, roles, each process's GPU, and the communicator of each
// pair or link.
#pragma once

#include <mpi.h>

#include <string_view>

namespace gpurelay {

// `relay`: a relay's middle stage, the consumer of the link before it and the producer on the
// link after it (B's y is what it sends on).
enum class Role { producer, consumer, both, relay };

// The collective patterns (pairs are the default, and use none).
enum class Collective { broadcast, allreduce };

// Where a rank stands: for pairs its pair and role; for a collective, `pairs` and `pair` count
// and number the consuming ranks, each with its row of /y and of the mismatch counts (broadcast:
// the receivers; all-reduce: every rank), and the group fields place it among its group.
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

// One rank runs both roles; otherwise the world size must be even. Adjacent pairs rank 2k with
// 2k+1 (same node under block placement); split pairs rank k with k + size/2 (across nodes).
// Throws a usage error for an odd world size.
PairPlacement place_pairs(int world_rank, int world_size, bool split);

// Groups of `group_size` consecutive ranks (group g: ranks g*n .. g*n + n - 1). Broadcast: each
// group's rank 0 produces (and consumes too in a group of one); the others consume, numbered
// group by group. All-reduce: every rank plays both roles and is its own row. Throws a usage
// error when an all-reduce group is too large for its sums to be exact (kernels/formula.hpp's
// bound, passed in as `max_allreduce_group`; checked first, so it is said on any world), or
// group_size does not divide the world.
PairPlacement place_groups(int world_rank, int world_size, int group_size, Collective op,
                           int max_allreduce_group);

// A relay through groups of `group_size` consecutive ranks: group rank k is stage k, a producer
// at stage 0, a consumer at the last, a relay between. `producer` and `consumer` are the world
// ranks of the stages before and after this one (itself at the ends); `pairs` and `pair` count
// and number the receiving stages (stages 1 .. n-1 of each group, group by group), each with its
// own row of /y and of the mismatch counts. Throws a usage error for a relay of one rank, or when
// group_size does not divide the world.
PairPlacement place_relay(int world_rank, int world_size, int group_size);
// The stage of a rank placed by place_relay, and the pair placement of one of its links, or of a
// pair (over a communicator of just the two ranks: the sender is rank 0, the receiver rank 1).
inline int relay_stage(const PairPlacement& p) { return p.group_rank; }
PairPlacement relay_link(bool outbound);

// A communicator of world ranks `sender` (rank 0) and `receiver` (rank 1), a pair or a relay's
// link: collective over the two only, so it costs the same at any world size. A relay stage
// makes its links in link order, so no two stages wait on each other.
MPI_Comm open_link_comm(int sender, int receiver);

// nccl-tests' bus bandwidth factor of `op` over `ranks` ranks: 1 for a broadcast, 2(n-1)/n for
// an all-reduce (busbw = algbw x this).
double bus_factor(Collective op, int ranks);

// The GPU this process drives among `visible` ones: its node-local rank modulo what it sees, so
// `srun --gpus-per-task=1` (one visible each) and one-GPU-per-rank launches both work.
int select_gpu(int local_rank, int visible);

std::string_view to_string(Role role);
std::string_view to_string(Collective op);

}  // namespace gpurelay
