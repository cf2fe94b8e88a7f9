#include "mpi/pairing.hpp"

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// The group fields of `world_rank` among groups of `group_size` consecutive ranks; a usage error
// (naming the groups as `groups`) when they do not divide the world.
PairPlacement in_groups(int world_rank, int world_size, int group_size, const char* groups) {
    if (group_size < 1 || world_size % group_size != 0) {
        throw usage_error("group_size = " + std::to_string(group_size) + " does not divide the " +
                          std::to_string(world_size) + " ranks into " + groups);
    }
    return {.groups = world_size / group_size,
            .group = world_rank / group_size,
            .group_rank = world_rank % group_size,
            .group_size = group_size};
}

}  // namespace

PairPlacement place_pairs(int world_rank, int world_size, bool split) {
    PairPlacement p;
    if (world_size == 1) return p;
    if (world_size % 2 != 0) {
        throw usage_error(
            "gpurelay needs one rank or an even number of ranks (producer/consumer "
            "pairs), got " +
            std::to_string(world_size));
    }
    p.pairs = world_size / 2;
    if (split) {
        p.pair = world_rank % p.pairs;
        p.producer = p.pair;
        p.consumer = p.pair + p.pairs;
    } else {
        p.pair = world_rank / 2;
        p.producer = 2 * p.pair;
        p.consumer = 2 * p.pair + 1;
    }
    p.role = world_rank == p.producer ? Role::producer : Role::consumer;
    p.peer = p.role == Role::producer ? p.consumer : p.producer;
    return p;
}

PairPlacement place_groups(int world_rank, int world_size, int group_size, Collective op,
                           int max_allreduce_group) {
    if (op == Collective::allreduce && group_size > max_allreduce_group) {
        throw usage_error("group_size = " + std::to_string(group_size) +
                          " is too large for an all-reduce whose sums are exact: at most " +
                          std::to_string(max_allreduce_group) + " ranks a group");
    }
    PairPlacement p = in_groups(world_rank, world_size, group_size, "groups of one size");
    p.producer = p.group * group_size;  // the group's root
    p.peer = p.producer;
    if (op == Collective::allreduce || group_size == 1) {
        p.role = Role::both;
        p.pairs = world_size;
        p.pair = world_rank;
        p.consumer = world_rank;
        p.peer = world_rank;
        return p;
    }
    p.pairs = p.groups * (group_size - 1);
    p.role = p.group_rank == 0 ? Role::producer : Role::consumer;
    p.pair = p.role == Role::consumer ? p.group * (group_size - 1) + p.group_rank - 1 : 0;
    p.consumer = p.role == Role::consumer ? world_rank : p.producer + 1;
    return p;
}

PairPlacement place_relay(int world_rank, int world_size, int group_size) {
    if (group_size == 1 || world_size == 1) {
        throw usage_error("a relay of 1 rank has no link: a relay needs at least 2 stages (run " +
                          std::to_string(world_size) + " ranks with group_size 0 or 2 or more)");
    }
    PairPlacement p = in_groups(world_rank, world_size, group_size, "relays of one length");
    const int stage = p.group_rank, last = group_size - 1;
    p.role = stage == 0 ? Role::producer : stage == last ? Role::consumer : Role::relay;
    p.producer = stage == 0 ? world_rank : world_rank - 1;
    p.consumer = stage == last ? world_rank : world_rank + 1;
    p.peer = stage == 0 ? p.consumer : p.producer;
    p.pairs = p.groups * last;
    p.pair = stage == 0 ? p.group * last : p.group * last + stage - 1;
    return p;
}

PairPlacement relay_link(bool outbound) {
    return {.role = outbound ? Role::producer : Role::consumer,
            .peer = outbound ? 1 : 0,
            .producer = 0,
            .consumer = 1};
}

double bus_factor(Collective op, int ranks) {
    if (op == Collective::broadcast) return 1.0;
    return 2.0 * (ranks - 1) / ranks;
}

int select_gpu(int local_rank, int visible) { return visible <= 0 ? -1 : local_rank % visible; }

std::string_view to_string(Role role) {
    constexpr std::string_view kNames[] = {"producer", "consumer", "producer+consumer", "relay"};
    return kNames[static_cast<int>(role)];
}

std::string_view to_string(Collective op) {
    return op == Collective::broadcast ? "broadcast" : "allreduce";
}

MPI_Comm open_link_comm(int sender, int receiver) {
    MPI_Group world = MPI_GROUP_NULL, pair = MPI_GROUP_NULL;
    const int ranks[2] = {sender, receiver};
    const Deadline bound("making the communicator of a pair or a relay's link");
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_incl(world, 2, ranks, &pair));
    MPI_Comm link = MPI_COMM_NULL;
    // Tagged by the sender: a middle stage makes two links, each with one neighbour.
    const int status = MPI_Comm_create_group(MPI_COMM_WORLD, pair, sender, &link);
    MPI_Group_free(&pair);
    MPI_Group_free(&world);
    MPI_CHECK(status);
    return link;
}

}  // namespace gpurelay
