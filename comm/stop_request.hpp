// Stopping early on SIGTERM, SIGINT or SIGUSR1 (Slurm sends SIGTERM at the time limit, a user
// presses Ctrl-C; Open MPI's mpirun forwards SIGUSR1 to every rank without killing them after
// it, as it does for SIGTERM): the handler only records the signal; the ranks then agree, step by step and without
// blocking, on the first step after which every rank stops, so the file is closed collectively.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

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

// One vote per step, carried by a non-blocking all-reduce that has `lag` steps to finish, so the
// host loop never waits on it in the common case. A rank's loop can run at most `lag` steps
// ahead of the slowest rank's: a relay's first stage must be free to run a step ahead of each
// stage behind it, or the line never fills.
class StopVote {
  public:
    // `timeout`: the longest a vote may wait for the other ranks (their step loops).
    StopVote(MPI_Comm comm, std::chrono::milliseconds timeout, int lag = 1)
        : comm_(comm), timeout_(timeout), votes_(static_cast<std::size_t>(std::max(1, lag))) {}
    ~StopVote();
    StopVote(const StopVote&) = delete;
    StopVote& operator=(const StopVote&) = delete;

    // Called once per step on every rank, in step order. Returns the signal every rank agreed to
    // stop on (the largest seen), or 0 to go on. The answer lags the signal by `lag` steps.
    int after_step();

  private:
    // One all-reduce in flight: the signal this rank sent, and the largest of all ranks'.
    struct Vote {
        MPI_Request request = MPI_REQUEST_NULL;
        int sent = 0;
        int agreed = 0;
    };
    MPI_Comm comm_;
    std::chrono::milliseconds timeout_;
    std::vector<Vote> votes_;  // a ring, sized once: MPI holds the addresses while in flight
    std::size_t next_ = 0;
};

}  // namespace gpurelay
