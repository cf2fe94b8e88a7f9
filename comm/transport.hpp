// Moving one tensor from a producer to a consumer. Like every queued call here, send and recv
// return once the work is queued: the data has left or arrived only when `stream` gets past it.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

class Transport {
  public:
    virtual ~Transport() = default;
    // "nccl", "mpi (host memory)", "mpi (host-staged)": as the report names it.
    virtual std::string name() const = 0;
    // Queues sending `bytes` at `data` to world rank `peer` on `stream`; `data` may be reused
    // once the stream is past the send.
    virtual void send(const void* data, std::size_t bytes, int peer, Stream& stream) = 0;
    // Queues receiving `bytes` from world rank `peer` into `data` on `stream`.
    virtual void recv(void* data, std::size_t bytes, int peer, Stream& stream) = 0;
    // Sends and receives queued between these form one group: a rank's send to itself and the
    // matching receive must, or NCCL waits for ever.
    virtual void group_begin() {}
    virtual void group_end() {}
    // Throws if the transport has failed in the background (NCCL's asynchronous errors; the
    // communicator is aborted first, which unblocks this rank's NCCL kernels).
    virtual void check_health() {}
};

struct TransportOptions {
    std::size_t max_message_bytes = 0;   // the largest message (staging buffers are this big)
    std::size_t chunk_bytes = 4u << 20;  // pieces of a staged message, pipelined
    std::chrono::milliseconds timeout{300000};  // longest wait on a peer
};

// MPI between host buffers (the CPU path): MPI runs on the stream's own thread.
std::unique_ptr<Transport> make_mpi_host_transport(MPI_Comm comm, const TransportOptions& options);
// MPI for device buffers through pinned staging buffers, copies and MPI pipelined piece by piece.
std::unique_ptr<Transport> make_mpi_staged_transport(MPI_Comm comm, Device& device,
                                                     const TransportOptions& options);
// NCCL point-to-point; collective over `comm` (the id is broadcast from its rank 0).
std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm);
// Whether NCCL is built in, and its version ("2.28.3"), or "none".
bool nccl_built();
std::string nccl_version_string();

}  // namespace gpurelay
