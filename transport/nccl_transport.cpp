// NCCL on the caller's CUDA streams: point-to-point for pairs, or one collective per call
// (broadcast from the group's rank 0, or a sum), over a communicator of the MPI one's ranks.
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

// An NCCL communicator over an MPI communicator's ranks, and its health.
class NcclComm {
  public:
    explicit NcclComm(MPI_Comm comm) {
        // Graph mixing off (not in 2.28's ncclConfig_t; a value set is kept): a captured call then
        // adds no event nodes (3, not 5). We run no eager call beside a graph, nor parallel graphs.
        setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 0);
        int size = 1;
        MPI_CHECK(MPI_Comm_rank(comm, &rank_));
        MPI_CHECK(MPI_Comm_size(comm, &size));
        ncclUniqueId id{};
        if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        // The broadcast and ncclCommInitRank wait for every rank of `comm`.
        const Deadline bound("making the NCCL communicator");
        MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
        ncclComm_t nccl_comm = nullptr;
        NCCL_CHECK(ncclCommInitRank(&nccl_comm, size, id, rank_));
        comm_ = nccl_comm;
    }
    ~NcclComm() {
        if (ncclComm_t comm = comm_.load(); comm != nullptr) ncclCommDestroy(comm);
    }
    NcclComm(const NcclComm&) = delete;
    NcclComm& operator=(const NcclComm&) = delete;

    int rank() const { return rank_; }

    // The communicator, or a runtime error once check_health has aborted it.
    ncclComm_t get() {
        const ncclComm_t comm = comm_.load();
        if (comm != nullptr) return comm;
        std::lock_guard lock(health_mutex_);
        throw runtime_error(failure_.empty() ? "NCCL communicator already destroyed" : failure_);
    }

    // Any thread that waits on the GPU calls this, one at a time: the communicator is aborted
    // once, and every later call reports the same failure rather than finding none and passing.
    void check_health() {
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
    int rank_ = 0;
    // Atomic: the main thread reads it while check_health() may abort it on another.
    std::atomic<ncclComm_t> comm_{nullptr};
    std::mutex health_mutex_;
    std::string failure_;  // set once, when check_health() aborted the communicator
};

// Point-to-point between a pair. A rank that sends to itself runs the send and the receive as one
// group on its producer stream (NCCL runs a communicator's calls in order, so a send to itself
// waits for ever for a receive queued after it); its receive then only waits for that group.
class NcclTransport final : public SlotRingTransport {
  public:
    NcclTransport(MPI_Comm comm, const PairPlacement& placement, Device& device,
                  const TransportOptions& options)
        : SlotRingTransport(device, placement, options),
          comm_(comm),
          to_itself_(placement.role == Role::both),
          arrived_(device, to_itself_ ? options.slots : 0) {}

    std::string name() const override { return "nccl"; }

    void publish(std::size_t k, Stream& stream) override {
        const ncclComm_t comm = comm_.get();
        if (to_itself_) wait_free(k, stream);
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(send_[k].data(), bytes_, ncclChar, peer_, comm, cuda_handle(stream)));
        if (to_itself_) {
            NCCL_CHECK(
                ncclRecv(recv_[k].data(), bytes_, ncclChar, peer_, comm, cuda_handle(stream)));
        }
        NCCL_CHECK(ncclGroupEnd());
        if (to_itself_) arrived_.record(k, stream);
    }

    const void* await(std::size_t k, Stream& stream) override {
        if (to_itself_) {
            arrived_.wait(k, stream);
        } else {
            wait_free(k, stream);
            NCCL_CHECK(ncclRecv(recv_[k].data(), bytes_, ncclChar, peer_, comm_.get(),
                                cuda_handle(stream)));
        }
        return recv_[k].data();
    }

    bool receive_waits() const override { return to_itself_; }
    void streams_idle() override {
        SlotRingTransport::streams_idle();
        arrived_.streams_idle();
    }
    void check_health() override { comm_.check_health(); }

  private:
    NcclComm comm_;
    bool to_itself_;
    SlotEvents arrived_;  // to itself: the group that moved slot k is done
};

// One collective call on the one stream both sides share (the root of a broadcast that does not
// consume broadcasts in place from its send buffer; the others ignore NCCL's send buffer).
class NcclCollective final : public CollectiveCall {
  public:
    NcclCollective(MPI_Comm group, Collective op, ReduceType type)
        : comm_(group), op_(op), type_(type) {}

    std::string name() const override { return "nccl " + std::string(to_string(op_)); }

    void run(const void* send, void* recv, std::size_t bytes, Stream& stream) override {
        check_collective_sides(op_, comm_.rank() == 0, send, recv);
        const ncclComm_t comm = comm_.get();
        void* out = recv != nullptr ? recv : const_cast<void*>(send);
        const void* in = send != nullptr ? send : out;
        if (op_ == Collective::allreduce) {
            const bool single = type_ == ReduceType::float32;
            NCCL_CHECK(ncclAllReduce(in, out, bytes / (single ? 4 : 8),
                                     single ? ncclFloat32 : ncclFloat64, ncclSum, comm,
                                     cuda_handle(stream)));
        } else {
            NCCL_CHECK(ncclBroadcast(in, out, bytes, ncclChar, 0, comm, cuda_handle(stream)));
        }
    }

    void check_health() override { comm_.check_health(); }

  private:
    NcclComm comm_;
    Collective op_;
    ReduceType type_;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm, const PairPlacement& placement,
                                               Device& device, const TransportOptions& options) {
    return std::make_unique<NcclTransport>(comm, placement, device, options);
}

std::unique_ptr<CollectiveCall> make_nccl_collective(MPI_Comm group, Collective op, ReduceType type,
                                                     Device&, const TransportOptions&) {
    return std::make_unique<NcclCollective>(group, op, type);
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
