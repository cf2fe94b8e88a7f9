// Which rank produces for which: pairs, roles, and each process's GPU.
#pragma once

#include <string>
#include <vector>

namespace gpurelay {

enum class Role { producer, consumer, both };

struct PairPlacement {
    int pairs = 1;
    int pair = 0;  // this rank's pair
    Role role = Role::both;
    int peer = 0;      // world rank of the other side (itself when role is both)
    int producer = 0;  // world ranks of the pair's two sides
    int consumer = 0;
};

// One rank runs both roles; otherwise the world size must be even. Adjacent pairs rank 2k with
// 2k+1 (same node under block placement); split pairs rank k with k + size/2 (across nodes).
// Throws a usage error for an odd world size.
PairPlacement place_pairs(int world_rank, int world_size, bool split);

// The GPU this process drives among `visible` ones: its node-local rank modulo what it sees, so
// `srun --gpus-per-task=1` (one visible each) and one-GPU-per-rank launches both work.
int select_gpu(int local_rank, int visible);

// Whether every producer of a `hosts.size()`-rank job runs on the node of its consumer
// (`hosts[r]` names rank r's node), as ipc needs.
bool pairs_on_one_node(const std::vector<std::string>& hosts, bool split);

std::string_view to_string(Role role);

}  // namespace gpurelay
