// Moving one tensor from a producer to a consumer. Like every queued call here, exchange returns
// once the work is queued: the data has left or arrived only when the stream gets past it.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "comm/pairing.hpp"
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
    // "nccl", "mpi (host memory)", "mpi (host-staged)", "ipc (same GPU)": as the report names it.
    virtual std::string name() const = 0;
    // Receive slot `slot` (of options.slots) when the transport places the consumer's slots
    // itself (ipc: memory its producer's process writes into), else nullptr: the caller then
    // brings its own receive buffers.
    virtual void* receive_slot(std::size_t slot) {
        (void)slot;
        return nullptr;
    }
    // Queues this rank's part of one transfer: a send, a receive, or both (a rank that sends to
    // itself); null for a side this rank does not play. The two are grouped inside as the
    // transport needs (NCCL: one group, or a send to itself waits for ever for its receive).
    // The send buffer may be reused once its stream is past the send; the received data are
    // there once the receiving stream is past the receive.
    virtual void exchange(const SendSide* send, const RecvSide* recv) = 0;
    // Where the producer's A should write its tensor for receive slot `slot`, when the transport
    // moves it by having A write straight into the consumer's slot (ipc with ipc_engine = "sm"):
    // that slot, once what must come first (the wait for its release) is queued on `stream`. The
    // send of that tensor (exchange, with this address as its data) then only marks it arrived.
    // nullptr: A writes into the producer's own buffer, which exchange sends.
    virtual void* produce_into(std::size_t slot, Stream& stream) {
        (void)slot;
        (void)stream;
        return nullptr;
    }
    // Queues on `stream` what the next send of slot `slot` must wait for before it moves anything
    // (ipc: the consumer's release of the slot), so that the caller can time the send from after
    // it; that send then does not wait again. A caller that does not call this gets the same
    // wait inside exchange.
    virtual void queue_send_wait(std::size_t slot, Stream& stream) {
        (void)slot;
        (void)stream;
    }
    // Whether a receive only waits, on the GPU, for what the producer's process writes into the
    // slot (ipc: the producer queues the copy). The consumer then has nothing to run beside C,
    // and with overlap it queues the receive on its compute stream, after C, instead of on a
    // comm stream of its own.
    virtual bool receive_only_waits() const { return false; }
    // Queued on `stream` by the consumer once the last reader of receive slot `slot` is done, so
    // that a transport writing the slot from the producer's process (ipc) may overwrite it; the
    // others write slots only from the consumer's own streams, which wait for that reader there.
    virtual void release(std::size_t slot, Stream& stream) {
        (void)slot;
        (void)stream;
    }
    // Throws if the transport has failed in the background (NCCL's asynchronous errors; the
    // communicator is aborted first, which unblocks this rank's NCCL kernels).
    virtual void check_health() {}
};

struct TransportOptions {
    std::size_t max_message_bytes = 0;   // the largest message (staging buffers are this big)
    std::size_t chunk_bytes = 4u << 20;  // pieces of a staged message, pipelined
    std::chrono::milliseconds timeout{300000};  // longest wait on a peer
    std::size_t slots = 1;                      // receive slots (the pipeline's depth)
    // Tests only: the producer of a transport that writes into the consumer's slots (ipc) skips
    // its wait for release(), as the pipeline's debug_skip_reuse_wait skips its own.
    bool debug_skip_reuse_wait = false;
    // ipc only (ipc_engine = "sm"): the producer's A writes straight into the consumer's slot
    // (produce_into), and a send only says it has arrived: no copy.
    bool produce_in_place = false;
};

// Whether world rank `peer` shares this process's node (MPI's shared-memory node, as the ipc
// transport needs it), agreed over `comm` (collective): false on every rank when any pair of
// the job is split across nodes.
bool every_pair_on_one_node(MPI_Comm comm, int peer);

// MPI between host buffers (the CPU path): MPI runs on the stream's own thread.
std::unique_ptr<Transport> make_mpi_host_transport(MPI_Comm comm, const TransportOptions& options);
// MPI for device buffers through pinned staging buffers, copies and MPI pipelined piece by piece.
std::unique_ptr<Transport> make_mpi_staged_transport(MPI_Comm comm, Device& device,
                                                     const TransportOptions& options);
// NCCL point-to-point; collective over `comm` (the id is broadcast from its rank 0).
std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm);

// The consumer's receive slots in memory its producer maps (same node only): CUDA IPC on the GPU,
// an MPI-3 shared-memory window on the CPU path; the producer copies into them (a copy engine
// on the GPU) and per-slot sequence words order the uses. Collective over `comm`; a usage error
// when a pair spans two nodes.
std::unique_ptr<Transport> make_ipc_transport(MPI_Comm comm, const PairPlacement& placement,
                                              Device& device, const TransportOptions& options);
// --- Collectives: the same exchange, over a group ------------------------------------------------
//
// A collective transport runs one collective over `group` (an MPI communicator holding just the
// group's ranks; its rank 0 is the root) per exchange, and every rank of the group must call
// exchange for each step, in step order. Its sides mean:
// - broadcast: the root passes `send` (its tensor) and, when it consumes too, `recv` (where its
//   own copy lands); every other rank passes only `recv`;
// - allreduce: every rank passes `send` (its share) and `recv` (where the sum lands), summed as
//   `type`;
// `peer` is not used. When a rank passes both sides they must be on one stream (a collective is
// one call on one stream; throws a runtime error otherwise). The send buffer may be reused, and
// the result read, once that stream is past the exchange.
enum class ReduceType { float32, float64 };

// MPI_Ibcast / MPI_Iallreduce between host buffers (the CPU path), on the stream's own thread, in
// `chunk_bytes` pieces.
std::unique_ptr<Transport> make_mpi_host_collective(MPI_Comm group, Collective op, ReduceType type,
                                                    const TransportOptions& options);
// The same collective for device buffers, through one pinned staging buffer: copied out on the
// stream, MPI on a proxy thread, copied back in on the stream.
std::unique_ptr<Transport> make_mpi_staged_collective(MPI_Comm group, Collective op,
                                                      ReduceType type, Device& device,
                                                      const TransportOptions& options);
// ncclBroadcast / ncclAllReduce on a communicator of the group's ranks (an id made on the
// group's rank 0 and broadcast over `group`). Builds without NCCL throw a usage error.
std::unique_ptr<Transport> make_nccl_collective(MPI_Comm group, Collective op, ReduceType type);

// Whether NCCL is built in, and its version ("2.28.3"), or "none".
bool nccl_built();
std::string nccl_version_string();

}  // namespace gpurelay
