// Completing MPI requests with a deadline: a peer that never answers becomes an error that
// names the operation, instead of a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

namespace gpurelay {

// Waits for `count` requests, polling with a growing pause (so idle threads leave the cores to
// the ranks that work); throws a runtime error naming `what` once `timeout` has passed.
void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what);

}  // namespace gpurelay
