// MPI_CHECK: a failed MPI call becomes the same exception as a failed CUDA or NCCL call
// (runtime/error.hpp), with MPI's own text. Here, not in runtime/, because only mpi/ and the
// folders above it link MPI.
#pragma once

#include <mpi.h>

#include <string>

#include "runtime/error.hpp"

namespace gpurelay {

// MPI's error string for an MPI return code.
std::string mpi_error_string(int code);

}  // namespace gpurelay

#define MPI_CHECK(call)                                         \
    GPURELAY_CHECK_IMPL("MPI", gpurelay_status_ == MPI_SUCCESS, \
                        ::gpurelay::mpi_error_string(gpurelay_status_), call)
