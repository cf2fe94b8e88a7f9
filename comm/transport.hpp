// Moving one tensor from a producer to a consumer. Like every queued call here, exchange returns
// once the work is queued: the data has left or arrived only when the stream gets past it.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

// One side of a transfer: `bytes` at `data`, to or from world rank `peer`, queued on `stream`.
// `slot` is which of the pipeline's ring slots `data` is (the tensor slot k = step mod depth, the
// same on both ranks), for a transport that maps its peer's slots once and copies into them; the
// MPI and NCCL transports only move the bytes.
struct SendSide {
    const void* data;
    std::size_t bytes;
    int peer;
    Stream& stream;
    std::size_t slot = 0;
};
struct RecvSide {
    void* data;
    std::size_t bytes;
    int peer;
    Stream& stream;
    std::size_t slot = 0;
};

class Transport {
  public:
    virtual ~Transport() = default;
    // "nccl", "mpi (host memory)", "mpi (host-staged)": as the report names it.
    virtual std::string name() const = 0;
    // Queues this rank's part of one transfer: a send, a receive, or both (a rank that sends to
    // itself); null for a side this rank does not play. The two are grouped inside as the
    // transport needs (NCCL: one group, or a send to itself waits for ever for its receive).
    // The send buffer may be reused once its stream is past the send; the received data are
    // there once the receiving stream is past the receive.
    virtual void exchange(const SendSide* send, const RecvSide* recv) = 0;
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
