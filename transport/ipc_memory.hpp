// The ipc transport's memory (private to transport/): the consumer's receive slots mapped into its
// producer's process, their flags, the copy and the wait; an MPI-3 window (CPU) or CUDA IPC (GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace gpurelay {

class IpcMemory {
  public:
    virtual ~IpcMemory() = default;
    // How the copy travels: "shared memory", "same GPU, time-sliced", "NVLink", "PCIe"...
    virtual std::string link() const = 0;
    // The consumer's receive slot k, as this process addresses it.
    virtual void* slot(std::size_t k) const = 0;
    virtual std::uint32_t* arrived(std::size_t k) const = 0;
    virtual std::uint32_t* released(std::size_t k) const = 0;

    // Queues a copy of `bytes` from this process's `src` into a slot on `stream`.
    virtual void copy(void* dst, const void* src, std::size_t bytes, Stream& stream) = 0;
    // Queues on `stream` a hold until `word` has reached `value`; `what` names it in a timeout.
    virtual void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                           const char* what) = 0;
};

inline std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// The CPU path: one node-wide MPI-3 shared-memory window (collective over `comm`; pairs on a node).
std::unique_ptr<IpcMemory> open_host_ipc_memory(MPI_Comm comm, const PairPlacement& placement,
                                                const TransportOptions& options);
// The GPU path: CUDA IPC (ipc_cuda_memory.cpp), collective over `comm`; a usage error without CUDA.
std::unique_ptr<IpcMemory> open_cuda_ipc_memory(MPI_Comm comm, const PairPlacement& placement,
                                                const TransportOptions& options, Device& device);

}  // namespace gpurelay
