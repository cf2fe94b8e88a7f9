// Builds without CUDA have no NCCL: asking for it is a usage error.
#include "runtime/error.hpp"
#include "transport/transport.hpp"

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

}  // namespace gpurelay
