// Completing MPI requests with a deadline: a peer that never answers becomes an error that
// names the operation, instead of a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

namespace gpurelay {

// Waits for `count` requests in MPI_Waitall, which keeps MPI's progress engine running (polling
// with pauses in between starves large transfers). A watchdog thread ends the job through the
// fatal handler, naming `what`, if the wait outlasts `timeout`.
void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what);

}  // namespace gpurelay
