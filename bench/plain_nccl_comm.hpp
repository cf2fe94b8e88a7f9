// A raw NCCL communicator for the benchmarks (CUDA builds only): made with NCCL's own calls, so
// what the benchmarks time through it is NCCL alone, not gpurelay's transport.
#pragma once

#include <nccl.h>

#include "runtime/error.hpp"

namespace gpurelay::bench {

class PlainNcclComm {
  public:
    // Rank `rank` of `size`; every rank passes the same `id` (from new_id() on one of them).
    PlainNcclComm(int size, int rank, const ncclUniqueId& id) {
        NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
    }
    ~PlainNcclComm() {
        if (comm_ != nullptr) ncclCommDestroy(comm_);
    }
    PlainNcclComm(const PlainNcclComm&) = delete;
    PlainNcclComm& operator=(const PlainNcclComm&) = delete;

    static ncclUniqueId new_id() {
        ncclUniqueId id{};
        NCCL_CHECK(ncclGetUniqueId(&id));
        return id;
    }
    ncclComm_t get() const { return comm_; }

  private:
    ncclComm_t comm_ = nullptr;
};

}  // namespace gpurelay::bench
