// The one table of transports, most preferred first (auto's order): a new transport is its own
// file (its protocol and factory), its row here, and its tests.
#include "transport/transport_table.hpp"

#include <array>

namespace gpurelay {
namespace {

// MPI's two forms run the same host-side work, which a CUDA graph cannot replay, and which no
// kernel can wait on.
constexpr std::string_view kMpiNoGraphs =
    "the MPI transports run host-side work (MPI calls, staging threads) that a CUDA graph cannot "
    "capture";
constexpr std::string_view kMpiNoDeviceLaunch = "MPI moves the tensor from the host";

std::unique_ptr<CollectiveCall> nccl_collective(MPI_Comm group, Collective op, ReduceType type,
                                                Device&, const TransportOptions&) {
    return make_nccl_collective(group, op, type);
}
std::unique_ptr<CollectiveCall> mpi_staged_collective(MPI_Comm group, Collective op,
                                                      ReduceType type, Device& device,
                                                      const TransportOptions& options) {
    return make_mpi_staged_collective(group, op, type, device, options);
}
std::unique_ptr<CollectiveCall> mpi_host_collective(MPI_Comm group, Collective op, ReduceType type,
                                                    Device&, const TransportOptions& options) {
    return make_mpi_host_collective(group, op, type, options);
}

// clang-format off
constexpr std::array<TransportRow, 4> kTransportTable = {{
    //        cuda   cpu    staged nodes  shared graphs itself in_place device
    {"nccl", {true,  false, false, true,  false, true,  true,  false,   false},
     {.device_launch = "NCCL's own kernels move the tensor, and their progress is no word a "
                       "kernel of ours can wait on"},
     make_nccl_transport, nccl_collective},
    {"ipc",  {true,  true,  false, false, true,  false, true,  true,    true},
     {.graphs = "the ipc transport's waits count each slot's uses, and a graph would replay the "
                "first count for ever",
      .collectives = "ipc copies into one consumer's slots",
      .staging = "ipc copies straight into the consumer's slots"},
     make_ipc_transport, nullptr},
    {"mpi",  {true,  true,  true,  true,  true,  false, false, false,   false},
     {.graphs = kMpiNoGraphs, .device_launch = kMpiNoDeviceLaunch},
     make_mpi_staged_transport, mpi_staged_collective},
    {"mpi",  {false, true,  false, true,  true,  false, false, false,   false},
     {.graphs = kMpiNoGraphs, .device_launch = kMpiNoDeviceLaunch},
     make_mpi_host_transport, mpi_host_collective},
}};
// clang-format on

}  // namespace

std::span<const TransportRow> transport_table() { return kTransportTable; }

}  // namespace gpurelay
