// Stopping early on SIGTERM (Slurm's time limit), SIGINT (Ctrl-C) or SIGUSR1 (which mpirun
// forwards to every rank without killing them after it, as it does for SIGTERM): the handler only
// records the signal; the ranks agree, at a cadence and without blocking a step, on the step after
// which every rank stops, so the file is closed collectively.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <utility>
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

// The ranks' vote to stop (docs/STRUCTURE.md, "The stop vote"), over the world at a cadence of
// steps every rank agrees on, so that no step waits for the world: a non-blocking all-reduce
// (MPI_MAX) of the signal this rank has seen, its time per step since its previous vote and the
// deadlines its clock has passed, posted after step b_n and waited for where the next is posted,
// after b_(n+1). It returns the same on every rank, and so every rank derives the same next
// cadence and the same step to stop after:
//   K = at least `lag`, else the steps that last 1 ms (at least 128 of them), but no more than
//       last 0.5 s, from the slowest rank's time per step in the last vote returned; and at most
//       twice the last K (from `lag` at the start), since a short cadence's few steps measure the
//       host queueing them ahead of the device, not the steps.
// A stop lands at most two cadences after the signal once the cadence has settled.
class StopVote {
  public:
    // `comm`: the ranks that stop together (duplicated: votes in flight never meet the caller's
    // collectives). `timeout`: the longest a vote waits for the others' loops. `lag`: the steps a
    // loop must be free to run ahead of the slowest's, the shortest cadence (a relay's first
    // stage runs a step ahead of each stage behind it, or the line never fills).
    StopVote(MPI_Comm comm, std::chrono::milliseconds timeout, int lag = 1);
    ~StopVote();
    StopVote(const StopVote&) = delete;
    StopVote& operator=(const StopVote&) = delete;

    // Called after each step on every rank, in order, by the loop that queues the steps (across
    // passes and sizes: it counts its calls). Returns the signal every rank agreed to stop on (the
    // largest seen), from then on, or 0 to go on. Between two votes it only counts.
    int after_step();

    // Times that end passes (duration): each vote carries how many this rank's clock has passed;
    // deadlines_passed() is the most any rank sent in the last vote returned (alike on every
    // rank after the same step; it only grows).
    void set_deadlines(std::vector<std::chrono::steady_clock::time_point> deadlines) {
        deadlines_ = std::move(deadlines);
    }
    std::int64_t deadlines_passed() const { return deadlines_passed_; }

    // The steps from the last vote posted to the next (alike on every rank), and the votes so far.
    std::int64_t cadence() const { return cadence_; }
    std::int64_t votes() const { return votes_; }
    // Whether the vote in flight has returned already, before its wait at the next vote.
    bool vote_returned() const { return in_flight_ && request_ == MPI_REQUEST_NULL; }

    // The rule above: the steps between two votes when the slowest rank took `step_ms` a step.
    static std::int64_t cadence_for(double step_ms, int lag);

  private:
    void look_at_vote();

    using Clock = std::chrono::steady_clock;
    MPI_Comm comm_ = MPI_COMM_NULL;
    std::chrono::milliseconds timeout_;
    int lag_;
    // The vote in flight: what this rank sent (signal, ms per step) and the largest of all ranks'.
    MPI_Request request_ = MPI_REQUEST_NULL;  // null once waited for, or returned to a look
    bool in_flight_ = false;                  // posted and not yet read
    double sent_[3] = {0, 0, 0};
    double agreed_[3] = {0, 0, 0};
    int stop_ = 0;  // the signal agreed on, once it is
    std::vector<Clock::time_point> deadlines_;
    std::int64_t deadlines_passed_ = 0;
    std::int64_t steps_ = 0, next_vote_ = 1, last_vote_ = 0, cadence_ = 1, votes_ = 0;
    Clock::time_point last_vote_at_;
};

}  // namespace gpurelay
