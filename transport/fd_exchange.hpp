// Passing a file descriptor, which MPI cannot carry, between two processes of a node: SCM_RIGHTS
// over a Unix socket in Linux's abstract namespace (no file), for ipc memory CUDA exports as one.
#pragma once

#include <mpi.h>

#include <chrono>

namespace gpurelay {

// Collective over the pair `me` and `peer` of `comm`, which must share a node: sends `mine` to
// the peer and returns the peer's descriptor, a new one this process owns (close it). Each wait
// (the connection, the descriptor) is bounded by `timeout`; a failure throws a runtime error.
int exchange_fd(MPI_Comm comm, int peer, int mine, std::chrono::milliseconds timeout);

}  // namespace gpurelay
