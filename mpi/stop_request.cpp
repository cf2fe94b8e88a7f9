#include "mpi/stop_request.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

volatile std::sig_atomic_t received_signal = 0;

extern "C" void record_signal(int signal) { received_signal = signal; }

// The signals that stop a run, each with its name and exit code; the first stands for any other.
struct StopSignal {
    int signal;
    const char* name;
    ExitCode code;
};
constexpr StopSignal kStopSignals[] = {{SIGTERM, "SIGTERM", ExitCode::interrupted_term},
                                       {SIGINT, "SIGINT", ExitCode::interrupted_int},
                                       {SIGUSR1, "SIGUSR1", ExitCode::interrupted_usr1}};

const StopSignal& stop_signal_of(int signal) {
    for (const StopSignal& s : kStopSignals) {
        if (s.signal == signal) return s;
    }
    return kStopSignals[0];
}

// The cadence's rule (stop_request.hpp): at least this many steps, at least this long, and no
// longer than this, so that a stop lands within about a second however long the steps are.
constexpr std::int64_t kMinVoteSteps = 128;
constexpr double kMinVoteMs = 1.0;
constexpr double kMaxVoteMs = 500.0;
// No cadence longer than this (steps that the clock cannot tell apart from nothing).
constexpr std::int64_t kMaxVoteSteps = 1 << 24;
// Looks at the vote in flight between two votes: more than the rounds of an all-reduce over
// thousands of ranks (13 at 8,192), each of which may need a look from every rank.
constexpr std::int64_t kLooksPerVote = 32;

std::int64_t steps_lasting(double ms, double step_ms) {
    return static_cast<std::int64_t>(
        std::min(std::ceil(ms / step_ms), static_cast<double>(kMaxVoteSteps)));
}

}  // namespace

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    // SA_RESTART: a signal must not turn the MPI or file call it interrupts into an error.
    action.sa_flags = SA_RESTART;
    for (const StopSignal& s : kStopSignals) sigaction(s.signal, &action, nullptr);
}

int stop_signal() { return received_signal; }
const char* stop_signal_name(int signal) { return stop_signal_of(signal).name; }
ExitCode stopped_exit_code(int signal) { return stop_signal_of(signal).code; }

std::int64_t StopVote::cadence_for(double step_ms, int lag) {
    step_ms = std::max(step_ms, 1e-6);
    const std::int64_t often = std::max(kMinVoteSteps, steps_lasting(kMinVoteMs, step_ms));
    return std::max<std::int64_t>({lag, 1, std::min(often, steps_lasting(kMaxVoteMs, step_ms))});
}

StopVote::StopVote(MPI_Comm comm, std::chrono::milliseconds timeout, int lag)
    : timeout_(timeout), lag_(std::max(1, lag)), cadence_(lag_), last_vote_at_(Clock::now()) {
    const Deadline bound("duplicating the stop vote's communicator");
    MPI_CHECK(MPI_Comm_dup(comm, &comm_));
}

StopVote::~StopVote() {
    // The vote in flight must complete on every rank before the communicator goes; bounded as in
    // after_step, and a failure ends the job through the fatal handler (no throw here).
    try {
        if (request_ != MPI_REQUEST_NULL) {
            wait_all(&request_, 1, timeout_, "the last stop vote (another rank's step loop)");
        }
    } catch (...) {
        fail_fatally(std::current_exception());
    }
    MPI_Comm_free(&comm_);
}

int StopVote::after_step() {
    ++steps_;
    if (stop_ != 0) return stop_;
    if (steps_ < next_vote_) {
        look_at_vote();
        return 0;
    }
    // A vote's step: the vote posted at the last one returns (every rank has posted it, so the
    // wait is long over when every rank is live), then this one's is posted.
    const Clock::time_point now = Clock::now();
    if (in_flight_) {
        // Not MPI_Wait: see wait_all, which also bounds the wait by timeout_s.
        if (request_ != MPI_REQUEST_NULL) {
            wait_all(&request_, 1, timeout_, "the stop vote (another rank's step loop)");
        }
        in_flight_ = false;
        stop_ = static_cast<int>(agreed_[0]);
        deadlines_passed_ = std::max(deadlines_passed_, static_cast<std::int64_t>(agreed_[2]));
        if (stop_ != 0) return stop_;
        // The rule in stop_request.hpp, from what every rank received alike: one cadence.
        cadence_ = std::min(cadence_for(agreed_[1], lag_), 2 * cadence_);
    }
    sent_[0] = stop_signal();
    sent_[1] = std::chrono::duration<double, std::milli>(now - last_vote_at_).count() /
               static_cast<double>(steps_ - last_vote_);
    sent_[2] = static_cast<double>(
        std::count_if(deadlines_.begin(), deadlines_.end(), [&](auto at) { return at <= now; }));
    MPI_CHECK(MPI_Iallreduce(sent_, agreed_, 3, MPI_DOUBLE, MPI_MAX, comm_, &request_));
    in_flight_ = true;
    ++votes_;
    last_vote_ = steps_;
    last_vote_at_ = now;
    next_vote_ = steps_ + cadence_;
    return 0;
}

// MPI moves a non-blocking collective on only inside MPI calls, which NCCL's and ipc's steps make
// none of: untouched, its rounds would all run in the next vote's wait (docs/STRUCTURE.md).
void StopVote::look_at_vote() {
    if (request_ == MPI_REQUEST_NULL) return;
    const std::int64_t every = std::max<std::int64_t>(1, cadence_ / kLooksPerVote);
    if ((steps_ - last_vote_) % every != 0) return;
    int done = 0;
    MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
}

}  // namespace gpurelay
