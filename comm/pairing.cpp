#include "comm/pairing.hpp"

#include "runtime/error.hpp"

namespace gpurelay {

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

bool pairs_on_one_node(const std::vector<std::string>& hosts, bool split) {
    const int size = static_cast<int>(hosts.size());
    for (int rank = 0; rank < size; ++rank) {
        const PairPlacement p = place_pairs(rank, size, split);
        if (hosts[static_cast<std::size_t>(p.producer)] !=
            hosts[static_cast<std::size_t>(p.consumer)]) {
            return false;
        }
    }
    return true;
}

int select_gpu(int local_rank, int visible) { return visible <= 0 ? -1 : local_rank % visible; }

std::string_view to_string(Role role) {
    switch (role) {
        case Role::producer:
            return "producer";
        case Role::consumer:
            return "consumer";
        case Role::both:
            return "producer+consumer";
    }
    return "?";
}

}  // namespace gpurelay
