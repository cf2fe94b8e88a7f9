// Builds without CUDA have no CUDA IPC (and no CUDA device to ask for it).
#include "runtime/error.hpp"
#include "transport/ipc_memory.hpp"

namespace gpurelay {

std::unique_ptr<IpcMemory> open_cuda_ipc_memory(MPI_Comm, const PairPlacement&, const IpcShape&,
                                                Device&) {
    throw usage_error(
        "transport = \"ipc\" on a GPU needs CUDA, but this gpurelay was built without");
}

}  // namespace gpurelay
