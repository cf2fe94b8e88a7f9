// NCCL on the caller's CUDA streams: point-to-point for pairs, or one collective per exchange
// (broadcast from the group's rank 0, or a sum). The communicator spans the MPI communicator's
// ranks, from an id made on its rank 0 and broadcast over MPI.
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "comm/collective_sides.hpp"
#include "comm/mpi_error.hpp"
#include "comm/transport.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// What one exchange runs: point-to-point (no collective), or the collective and what it sums.
struct NcclOperation {
    std::optional<Collective> collective;
    ReduceType type = ReduceType::float32;
};

class NcclTransport final : public Transport {
  public:
    NcclTransport(MPI_Comm comm, NcclOperation operation) : operation_(operation) {
        // Graph mixing off, before NCCL reads its parameters: a captured NCCL call then adds no
        // event nodes of its own to the graph (3 nodes instead of 5), which makes a graph launch
        // cheaper. gpurelay never has an eager NCCL call and a graph on the communicator
        // running at once, nor two graphs on parallel streams, which mixing is for. (NCCL 2.28's
        // ncclConfig_t has no graph usage field, so the environment is the way to say it.) An
        // NCCL_GRAPH_MIXING_SUPPORT already set is left as it is.
        setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 0);
        int rank = 0, size = 1;
        MPI_CHECK(MPI_Comm_rank(comm, &rank));
        MPI_CHECK(MPI_Comm_size(comm, &size));
        ncclUniqueId id{};
        if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
        ncclComm_t nccl_comm = nullptr;
        NCCL_CHECK(ncclCommInitRank(&nccl_comm, size, id, rank));
        comm_ = nccl_comm;
        root_ = rank == 0;
    }
    ~NcclTransport() override {
        if (ncclComm_t comm = comm_.load(); comm != nullptr) ncclCommDestroy(comm);
    }
    NcclTransport(const NcclTransport&) = delete;
    NcclTransport& operator=(const NcclTransport&) = delete;

    std::string name() const override {
        if (!operation_.collective) return "nccl";
        return "nccl " + std::string(to_string(*operation_.collective));
    }

    void exchange(const SendSide* send, const RecvSide* recv) override {
        const ncclComm_t comm = comm_.load();
        if (comm == nullptr) throw runtime_error(failure());
        if (operation_.collective) {
            collective(send, recv, comm);
            return;
        }
        NCCL_CHECK(ncclGroupStart());
        if (send != nullptr) {
            NCCL_CHECK(ncclSend(send->data, send->bytes, ncclChar, send->peer, comm,
                                cuda_handle(send->stream)));
        }
        if (recv != nullptr) {
            NCCL_CHECK(ncclRecv(recv->data, recv->bytes, ncclChar, recv->peer, comm,
                                cuda_handle(recv->stream)));
        }
        NCCL_CHECK(ncclGroupEnd());
    }

    // Any thread that waits on the GPU calls this (the main thread, the result writer's): one
    // at a time, so the communicator is aborted once, and every later call (on any thread)
    // reports the same failure instead of finding no communicator and calling it healthy.
    void check_health() override {
        std::lock_guard lock(health_mutex_);
        const ncclComm_t comm = comm_.load();
        if (comm == nullptr) {
            if (!failure_.empty()) throw runtime_error(failure_);
            return;
        }
        ncclResult_t state = ncclSuccess;
        NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
        if (state != ncclSuccess && state != ncclInProgress) {
            failure_ = std::string("NCCL reported an asynchronous error (") +
                       ncclGetErrorString(state) + "): a peer failed or the network broke";
            // Aborting unblocks this rank's NCCL kernels; a plain destroy would wait for them.
            comm_ = nullptr;
            ncclCommAbort(comm);
            throw runtime_error(failure_);
        }
    }

  private:
    // One collective call on the one stream both sides share (the root of a broadcast that does
    // not consume broadcasts in place from its send buffer; the others ignore NCCL's send buffer).
    void collective(const SendSide* send, const RecvSide* recv, ncclComm_t comm) {
        const bool allreduce = *operation_.collective == Collective::allreduce;
        Stream& stream = collective_stream(*operation_.collective, root_, send, recv);
        const std::size_t bytes = collective_bytes(send, recv);
        void* out = recv != nullptr ? recv->data : const_cast<void*>(send->data);
        const void* in = send != nullptr ? send->data : out;
        if (allreduce) {
            const bool single = operation_.type == ReduceType::float32;
            NCCL_CHECK(ncclAllReduce(in, out, bytes / (single ? 4 : 8),
                                     single ? ncclFloat32 : ncclFloat64, ncclSum, comm,
                                     cuda_handle(stream)));
        } else {
            NCCL_CHECK(ncclBroadcast(in, out, bytes, ncclChar, 0, comm, cuda_handle(stream)));
        }
    }

    std::string failure() {
        std::lock_guard lock(health_mutex_);
        return failure_.empty() ? "NCCL communicator already destroyed" : failure_;
    }

    NcclOperation operation_;
    bool root_ = false;  // rank 0 of the communicator: a broadcast's root
    // Atomic: exchange() reads it on the main thread while check_health() may abort it on
    // another.
    std::atomic<ncclComm_t> comm_{nullptr};
    std::mutex health_mutex_;
    std::string failure_;  // set once, when check_health() aborted the communicator
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm) {
    return std::make_unique<NcclTransport>(comm, NcclOperation{});
}

std::unique_ptr<Transport> make_nccl_collective(MPI_Comm group, Collective op, ReduceType type) {
    return std::make_unique<NcclTransport>(group, NcclOperation{op, type});
}

bool nccl_built() { return true; }

std::string nccl_version_string() {
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess) return "unknown";
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

}  // namespace gpurelay
