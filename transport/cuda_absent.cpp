// Without CUDA there is no NCCL, CUDA IPC or CUDA device: asking for either is a usage error.
#include "runtime/error.hpp"
#include "transport/ipc_memory.hpp"

namespace gpurelay {

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm, const PairPlacement&, Device&,
                                               const TransportOptions&) {
    throw usage_error("transport = \"nccl\" but this gpurelay was built without CUDA and NCCL");
}
std::unique_ptr<CollectiveCall> make_nccl_collective(MPI_Comm, Collective, ReduceType, Device&,
                                                     const TransportOptions&) {
    throw usage_error("transport = \"nccl\" but this gpurelay was built without CUDA and NCCL");
}
bool nccl_built() { return false; }
std::string nccl_version_string() { return "none"; }

std::unique_ptr<IpcMemory> open_cuda_ipc_memory(MPI_Comm, const PairPlacement&,
                                                const TransportOptions&, Device&) {
    throw usage_error(
        "transport = \"ipc\" on a GPU needs CUDA, but this gpurelay was built without");
}

}  // namespace gpurelay
