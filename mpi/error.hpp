// MPI_CHECK: a failed MPI call becomes the same exception as a failed CUDA or NCCL call
// (runtime/error.hpp), with MPI's own text. Here, not in runtime/, because only mpi/ and the
// folders above it link MPI.
#pragma once

#include <mpi.h>

#include <string>

#include "runtime/error.hpp"

namespace gpurelay {

// MPI's error string for an MPI return code.
inline std::string mpi_error_string(int code) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace gpurelay

#define MPI_CHECK(call)                                         \
    GPURELAY_CHECK_IMPL("MPI", gpurelay_status_ == MPI_SUCCESS, \
                        ::gpurelay::mpi_error_string(gpurelay_status_), call)
