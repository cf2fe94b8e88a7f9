// Set-up steps whose failure every rank must agree on: each rank runs the step, and if it failed
// anywhere, every rank throws the same AgreedError (the message of the lowest failing rank), so
// one rank prints it and all exit with one code and no rank is left waiting in a collective.
#pragma once

#include <mpi.h>

#include <functional>

#include "runtime/error.hpp"

namespace gpurelay {

// An error every rank of the job holds; main prints it once and exits without MPI_Abort.
class AgreedError : public Error {
  public:
    using Error::Error;
};

// Runs `step` on this rank, then agrees with every rank of `comm` on whether any failed.
void agree(MPI_Comm comm, const std::function<void()>& step);

}  // namespace gpurelay
