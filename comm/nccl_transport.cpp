// NCCL point-to-point on the caller's CUDA streams. The communicator spans the MPI communicator's
// ranks, from an id made on its rank 0 and broadcast over MPI.
#include <nccl.h>

#include "comm/mpi_error.hpp"
#include "comm/transport.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

class NcclTransport final : public Transport {
  public:
    explicit NcclTransport(MPI_Comm comm) {
        int rank = 0, size = 1;
        MPI_CHECK(MPI_Comm_rank(comm, &rank));
        MPI_CHECK(MPI_Comm_size(comm, &size));
        ncclUniqueId id{};
        if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
        NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
    }
    ~NcclTransport() override {
        if (comm_ != nullptr) ncclCommDestroy(comm_);
    }
    NcclTransport(const NcclTransport&) = delete;
    NcclTransport& operator=(const NcclTransport&) = delete;

    std::string name() const override { return "nccl"; }

    void exchange(const SendSide* send, const RecvSide* recv) override {
        NCCL_CHECK(ncclGroupStart());
        if (send != nullptr) {
            NCCL_CHECK(ncclSend(send->data, send->bytes, ncclChar, send->peer, comm_,
                                cuda_handle(send->stream)));
        }
        if (recv != nullptr) {
            NCCL_CHECK(ncclRecv(recv->data, recv->bytes, ncclChar, recv->peer, comm_,
                                cuda_handle(recv->stream)));
        }
        NCCL_CHECK(ncclGroupEnd());
    }

    void check_health() override {
        if (comm_ == nullptr) return;
        ncclResult_t state = ncclSuccess;
        NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
        if (state != ncclSuccess && state != ncclInProgress) {
            const std::string reason = ncclGetErrorString(state);
            // Aborting unblocks this rank's NCCL kernels; a plain destroy would wait for them.
            ncclCommAbort(comm_);
            comm_ = nullptr;
            throw runtime_error("NCCL reported an asynchronous error (" + reason +
                                "): a peer failed or the network broke");
        }
    }

  private:
    ncclComm_t comm_ = nullptr;
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
