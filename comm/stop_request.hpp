// Stopping early on SIGTERM, SIGINT or SIGUSR1 (Slurm sends SIGTERM at the time limit, a user
// presses Ctrl-C; Open MPI's mpirun forwards SIGUSR1 to every rank without killing them after
// it, as it does for SIGTERM): the handler only records the signal; the ranks then agree, step by step and without
// blocking, on the first step after which every rank stops, so the file is closed collectively.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>

#include "runtime/error.hpp"

namespace gpurelay {

// Installs the SIGTERM, SIGINT and SIGUSR1 handlers (async-signal-safe: they set a flag).
void install_stop_handlers();
// The signal received so far (SIGTERM, SIGINT, SIGUSR1) or 0.
int stop_signal();
// "SIGTERM", "SIGINT" or "SIGUSR1".
const char* stop_signal_name(int signal);
// What a run stopped by `signal` exits with: 128 + the signal's number, as a shell reports it.
ExitCode stopped_exit_code(int signal);

// One vote per step, carried by a non-blocking all-reduce that has a whole step to finish, so
// the host loop never waits on it in the common case.
class StopVote {
  public:
    // `timeout`: the longest a vote may wait for the other ranks (their step loops).
    StopVote(MPI_Comm comm, std::chrono::milliseconds timeout) : comm_(comm), timeout_(timeout) {}
    ~StopVote();
    StopVote(const StopVote&) = delete;
    StopVote& operator=(const StopVote&) = delete;

    // Called once per step on every rank, in step order. Returns the signal every rank agreed to
    // stop on (the largest seen), or 0 to go on. The answer lags the signal by one step.
    int after_step();

  private:
    MPI_Comm comm_;
    std::chrono::milliseconds timeout_;
    MPI_Request request_ = MPI_REQUEST_NULL;
    int sent_ = 0;
    int agreed_ = 0;
};

}  // namespace gpurelay
