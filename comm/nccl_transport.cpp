// NCCL point-to-point on the caller's CUDA streams. The communicator spans the MPI communicator's
// ranks, from an id made on its rank 0 and broadcast over MPI.
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "comm/mpi_error.hpp"
#include "comm/transport.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

class NcclTransport final : public Transport {
  public:
    explicit NcclTransport(MPI_Comm comm) {
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
    }
    ~NcclTransport() override {
        if (ncclComm_t comm = comm_.load(); comm != nullptr) ncclCommDestroy(comm);
    }
    NcclTransport(const NcclTransport&) = delete;
    NcclTransport& operator=(const NcclTransport&) = delete;

    std::string name() const override { return "nccl"; }

    void exchange(const SendSide* send, const RecvSide* recv) override {
        const ncclComm_t comm = comm_.load();
        if (comm == nullptr) throw runtime_error(failure());
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
    std::string failure() {
        std::lock_guard lock(health_mutex_);
        return failure_.empty() ? "NCCL communicator already destroyed" : failure_;
    }

    // Atomic: exchange() reads it on the main thread while check_health() may abort it on
    // another.
    std::atomic<ncclComm_t> comm_{nullptr};
    std::mutex health_mutex_;
    std::string failure_;  // set once, when check_health() aborted the communicator
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm) {
    return std::make_unique<NcclTransport>(comm);
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
