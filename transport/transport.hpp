// Tensors from producer to consumer through a ring of slots; each call only queues its work.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "mpi/pairing.hpp"
#include "runtime/device.hpp"
#include "runtime/slot_flags.hpp"
#include "runtime/stream.hpp"
#include "runtime/timeout.hpp"

namespace gpurelay {

// The slot protocol (described in runtime/slot_flags.hpp), which every transport implements
// alike. Per step, slot k = step mod slots: the producer calls acquire (where A writes x), then
// publish; the consumer calls await (where x lands), then release after the slot's last reader.
// Each transport queues the reuse wait where its writes happen (the consumer's receive stream,
// or the producer's stream when it writes the consumer's memory). A rank of both roles calls all.
class Transport {
  public:
    virtual ~Transport() = default;
    // "nccl", "mpi (host memory)", "mpi (host-staged)", "ipc (same GPU, ...)": as reported.
    virtual std::string name() const = 0;
    // Producer: where A writes slot k's next tensor, after what must come first on `stream`.
    virtual void* acquire(std::size_t k, Stream& stream) = 0;
    // Producer: sends what A wrote into slot k, queued on `stream` after A.
    virtual void publish(std::size_t k, Stream& stream) = 0;
    // Consumer: slot k's next tensor, there once `stream` is past this call.
    virtual const void* await(std::size_t k, Stream& stream) = 0;
    // Consumer: queued on `stream` after the last reader of slot k.
    virtual void release(std::size_t k, Stream& stream) = 0;
    // Whether await only waits on the producer's writes (ipc, to itself): nothing runs beside C.
    virtual bool receive_waits() const = 0;
    // Every stream of this rank is idle: the orderings queued so far are met, and the next work
    // may be a graph capture (whose waits may name only events recorded in the same capture).
    virtual void streams_idle() = 0;
    // The bytes of each tensor from now on, at most a slot's: a run of several sizes moves each
    // in turn through the same slots. Called only while every stream of the rank is idle.
    virtual void set_tensor_bytes(std::size_t bytes) = 0;
    // Throws if the transport failed in the background (NCCL's async errors, after an abort).
    virtual void check_health() {}
    // launch = "device": this rank's flags of one side, for kernels that run the protocol
    // themselves, in memory they may write (their counts stay there between passes); null where
    // the transport moves the bytes itself (all but ipc in place) or the rank plays no such side.
    virtual SlotFlags* slot_flags(Role) { return nullptr; }
};

struct TransportOptions {
    std::size_t slot_bytes = 0;          // one tensor (staging buffers are this big)
    std::size_t chunk_bytes = 4u << 20;  // pieces of a staged message, pipelined
    std::chrono::milliseconds timeout = kDefaultTimeout;  // longest wait on a peer
    std::size_t slots = 1;                                // the pipeline's depth
    // Tests only: no wait for a slot's release, to show that verification catches the overwrite.
    bool debug_skip_reuse_wait = false;
    bool produce_in_place = false;  // ipc_engine = "sm": A writes the consumer's slot, no copy
};

// A pair transport between the ranks of `comm` that `placement` names: collective over `comm`,
// it allocates the slots of `placement`'s role(s). Each is a row's of transport_table.hpp.
using PairFactory = std::unique_ptr<Transport>(MPI_Comm comm, const PairPlacement& placement,
                                               Device& device, const TransportOptions& options);
// MPI between host buffers (the CPU path): MPI runs on the stream's own thread.
PairFactory make_mpi_host_transport;
// MPI for device buffers through pinned staging buffers, copies and MPI pipelined piece by piece.
PairFactory make_mpi_staged_transport;
// NCCL point-to-point (the id is broadcast from `comm`'s rank 0). A usage error without NCCL.
PairFactory make_nccl_transport;
// The consumer's slots in memory its producer maps (same node only; ipc_transport.cpp): CUDA IPC on
// the GPU, an MPI-3 shared-memory window on the CPU path. A usage error across two nodes.
PairFactory make_ipc_transport;

// A relay's middle stage's slot protocol: await and release on the inbound link's transport,
// acquire and publish on the outbound link's, with `slots` slots each. acquire may be queued on
// another stream than publish: a slot is written again only after its last send has read it.
std::unique_ptr<Transport> make_relay_transport(std::unique_ptr<Transport> inbound,
                                                std::unique_ptr<Transport> outbound, Device& device,
                                                std::size_t slots);

// --- Collectives: one over `group` (an MPI communicator of the group's ranks; its rank 0 is the
// root) per call, every rank calling in step order. Broadcast: the root passes `send` (and `recv`
// when it keeps a copy), the others only `recv`. All-reduce: every rank passes `send` (its share)
// and `recv` (where the sum lands), summed as `type`. Wrong sides: a runtime error.
enum class ReduceType { float32, float64 };

class CollectiveCall {
  public:
    virtual ~CollectiveCall() = default;
    virtual std::string name() const = 0;
    virtual void run(const void* send, void* recv, std::size_t bytes, Stream& stream) = 0;
    virtual void check_health() {}
};

using CollectiveFactory = std::unique_ptr<CollectiveCall>(MPI_Comm group, Collective op,
                                                          ReduceType type, Device& device,
                                                          const TransportOptions& options);
// MPI_Ibcast / MPI_Iallreduce on the stream's thread (the CPU path), in `chunk_bytes` pieces.
CollectiveFactory make_mpi_host_collective;
// Device buffers, via one pinned staging buffer: copies on the stream, MPI on a proxy thread.
CollectiveFactory make_mpi_staged_collective;
// ncclBroadcast / ncclAllReduce over the group's ranks. A usage error without NCCL.
CollectiveFactory make_nccl_collective;

// The slot protocol over a collective: the producer's slots are what the rank contributes, the
// consumer's where the result lands; the collective runs when the rank's last side is queued.
std::unique_ptr<Transport> make_collective_transport(std::unique_ptr<CollectiveCall> call,
                                                     const PairPlacement& placement, Device& device,
                                                     const TransportOptions& options);

// Whether NCCL is built in, and its version ("2.28.3"), or "none".
bool nccl_built();
std::string nccl_version_string();

}  // namespace gpurelay
