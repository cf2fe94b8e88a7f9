// Which transport a run uses: one table of what each transport needs and allows, and one function
// that returns the choice and its reason. Validation calls it with what the deck alone says (the
// path may still be unknown); set-up calls it again with what the ranks found.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace gpurelay {

// The transports a run can open (ipc's engine, copy or sm, is a setting of ipc).
enum class TransportUsed { nccl, ipc, mpi_host, mpi_staged };

// What a transport needs and allows.
struct TransportTraits {
    TransportUsed used;
    std::string_view name;  // as a deck names it in messages
    bool cuda_path;         // runs on the CUDA path
    bool cpu_path;          // runs on the CPU path
    bool across_nodes;      // a pair may span two nodes
    bool shared_gpu;        // two ranks of a pair or group may share one GPU
    bool graphs;            // its work can be captured in a CUDA graph
    bool collectives;       // runs broadcast and all-reduce
    bool to_itself_on_gpu;  // one rank may send to itself on the CUDA path
    // Its slots and sequence words are memory both roles address, so persistent kernels can run
    // its protocol themselves (launch = "device").
    bool device_launch;
    std::string_view no_graphs;         // why its work cannot be captured, where it cannot
    std::string_view no_collectives;    // why it runs no collective, where it does not
    std::string_view no_device_launch;  // why a device cannot drive it, where it cannot
};

// clang-format off
inline constexpr std::array<TransportTraits, 4> kTransports = {{
    //                          name    cuda   cpu    nodes  shared graphs coll.  itself device
    {TransportUsed::nccl,       "nccl", true,  false, true,  false, true,  true,  true,  false, "", "",
     "NCCL's own kernels move the tensor, and their progress is no word a kernel of ours can wait "
     "on"},
    {TransportUsed::ipc,        "ipc",  true,  true,  false, true,  false, false, true,  true,
     "the ipc transport's waits count each slot's uses, and a graph would replay the first count "
     "for ever",
     "ipc copies into one consumer's slots", ""},
    {TransportUsed::mpi_host,   "mpi",  false, true,  true,  true,  false, true,  true,  false,
     "the MPI transports run host-side work (MPI calls, staging threads) that a CUDA graph cannot "
     "capture", "", "MPI moves the tensor from the host"},
    {TransportUsed::mpi_staged, "mpi",  true,  true,  true,  true,  false, true,  false, false,
     "the MPI transports run host-side work (MPI calls, staging threads) that a CUDA graph cannot "
     "capture", "", "MPI moves the tensor from the host"},
}};
// clang-format on

const TransportTraits& traits_of(TransportUsed used);

// What the ranks found, as far as it is known: nullopt where it is not yet.
struct RunFacts {
    std::optional<bool> cuda_path;
    std::optional<bool> one_node;  // every pair (or group) on one node
    // A GPU two ranks of one pair or group share ("host bus-id"), or "" when none do.
    std::optional<std::string> shared_gpu;
    std::optional<int> world_size;
};

// What the deck alone says: the path when `device` names it, nothing else.
RunFacts facts_from_config(const Config& config);

struct TransportChoice {
    std::optional<TransportUsed> used;  // nullopt: not decided by these facts yet
    // Why auto chose it, when it passed over a transport it would rather have used.
    std::string reason;
    // ipc with ipc_engine = "sm": A writes into the consumer's slot, so the producer has no
    // slots of its own.
    bool a_writes_in_place = false;
};

// The transport for `config` given `facts`, or a usage error naming the key and the need that
// refuses the request.
TransportChoice choose_transport(const Config& config, const RunFacts& facts);

}  // namespace gpurelay
