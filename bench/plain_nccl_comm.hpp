// A raw NCCL communicator for the benchmarks (CUDA builds only): made with NCCL's own calls, so
// what the benchmarks time through it is NCCL alone, not gpurelay's transport.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "mpi/error.hpp"
#include "runtime/error.hpp"

namespace gpurelay::bench {

class PlainNcclComm {
  public:
    // Rank `rank` of `size` over MPI_COMM_WORLD (collective where size > 1); rank 0 makes the id.
    PlainNcclComm(int size, int rank) {
        ncclUniqueId id{};
        if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        if (size > 1) MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
        NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
    }
    ~PlainNcclComm() {
        if (comm_ != nullptr) ncclCommDestroy(comm_);
    }
    PlainNcclComm(const PlainNcclComm&) = delete;
    PlainNcclComm& operator=(const PlainNcclComm&) = delete;

    ncclComm_t get() const { return comm_; }

  private:
    ncclComm_t comm_ = nullptr;
};

}  // namespace gpurelay::bench
