// The transports, in auto's order; a new one is its own file (protocol, factory), a row, tests.
#include "transport/transport_table.hpp"

#include <array>

namespace gpurelay {
namespace {

// MPI's two forms run the same host-side work: no CUDA graph can replay it, no kernel wait on it.
constexpr std::string_view kMpiNoGraphs =
    "the MPI transports run host-side work (MPI calls, staging threads) that a CUDA graph cannot "
    "capture";
constexpr std::string_view kMpiNoDeviceLaunch = "MPI moves the tensor from the host";

// What each allows is named; what is not named, it does not allow.
constexpr std::array<TransportRow, 4> kTransportTable = {{
    {.name = "nccl",
     .allows = {.cuda_path = true, .across_nodes = true, .graphs = true, .to_itself_on_gpu = true},
     .why_not = {.device_launch = "NCCL's own kernels move the tensor, and their progress is no "
                                  "word a kernel of ours can wait on"},
     .make_pair = make_nccl_transport,
     .make_collective = make_nccl_collective},
    {.name = "ipc",
     .allows = {.cuda_path = true,
                .cpu_path = true,
                .shared_gpu = true,
                .to_itself_on_gpu = true,
                .in_place = true,
                .device_launch = true},
     .why_not = {.graphs = "the ipc transport's waits count each slot's uses, and a graph would "
                           "replay the first count for ever",
                 .collectives = "ipc copies into one consumer's slots",
                 .staging = "ipc copies straight into the consumer's slots"},
     .make_pair = make_ipc_transport},
    {.name = "mpi",
     .allows = {.cuda_path = true,
                .cpu_path = true,
                .staged = true,
                .across_nodes = true,
                .shared_gpu = true},
     .why_not = {.graphs = kMpiNoGraphs, .device_launch = kMpiNoDeviceLaunch},
     .make_pair = make_mpi_staged_transport,
     .make_collective = make_mpi_staged_collective},
    {.name = "mpi",
     .allows = {.cpu_path = true, .across_nodes = true, .shared_gpu = true},
     .why_not = {.graphs = kMpiNoGraphs, .device_launch = kMpiNoDeviceLaunch},
     .make_pair = make_mpi_host_transport,
     .make_collective = make_mpi_host_collective},
}};

}  // namespace

std::span<const TransportRow> transport_table() { return kTransportTable; }

}  // namespace gpurelay
