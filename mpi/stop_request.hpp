// Stopping early on SIGTERM, SIGINT or SIGUSR1 (which mpirun forwards without killing the ranks
// after it): the handler only records the signal; the ranks agree on the step to stop after.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/error.hpp"

namespace gpurelay {

void install_stop_handlers();  // async-signal-safe: they set a flag
int stop_signal();             // the signal received so far, or 0
const char* stop_signal_name(int signal);
// 128 + the signal's number, as a shell reports it.
ExitCode stopped_exit_code(int signal);

// The ranks' vote to stop (docs/STRUCTURE.md, "The stop vote" gives the cadence's rule and why):
// a non-blocking all-reduce (MPI_MAX) of signal, time per step and deadlines passed, posted at one
// vote's step and waited for at the next, so every rank derives the same cadence and stop step.
class StopVote {
  public:
    // `comm` is duplicated (votes in flight never meet the caller's collectives). `lag`: the
    // shortest cadence, the steps a loop may run ahead of the slowest (a relay's group size).
    StopVote(MPI_Comm comm, std::chrono::milliseconds timeout, int lag = 1);
    ~StopVote();
    StopVote(const StopVote&) = delete;
    StopVote& operator=(const StopVote&) = delete;

    // Called after each step by the loop that queues them (across passes and sizes): the signal
    // every rank agreed to stop on, from then on, or 0; between two votes it only counts.
    int after_step();

    // Times that end passes (duration); deadlines_passed(): the most any rank had passed in the
    // last vote returned (alike on every rank after the same step; it only grows).
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
