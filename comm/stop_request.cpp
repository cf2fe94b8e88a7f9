#include "comm/stop_request.hpp"

#include <csignal>

#include "comm/mpi_error.hpp"
#include "comm/mpi_wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

volatile std::sig_atomic_t received_signal = 0;

extern "C" void record_signal(int signal) { received_signal = signal; }

}  // namespace

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    // SA_RESTART: a signal must not turn the MPI or file call it interrupts into an error.
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGUSR1, &action, nullptr);
}

int stop_signal() { return received_signal; }

const char* stop_signal_name(int signal) {
    switch (signal) {
        case SIGINT: return "SIGINT";
        case SIGUSR1: return "SIGUSR1";
        default: return "SIGTERM";
    }
}

ExitCode stopped_exit_code(int signal) {
    switch (signal) {
        case SIGINT: return ExitCode::interrupted_int;
        case SIGUSR1: return ExitCode::interrupted_usr1;
        default: return ExitCode::interrupted_term;
    }
}

StopVote::~StopVote() {
    // The vote in flight must complete on every rank before the communicator is used again.
    // Not MPI_Wait, as in after_step: a thread blocked in MPI starves the other threads' MPI
    // calls, and a rank that never votes again must end the job, not hang it. A destructor
    // cannot throw, so a failure here ends the job through the fatal handler.
    try {
        for (std::size_t i = 0; i < votes_.size(); ++i) {
            Vote& vote = votes_[(next_ + i) % votes_.size()];  // in the order they were posted
            if (vote.request == MPI_REQUEST_NULL) continue;
            wait_all(&vote.request, 1, timeout_, "the last stop votes (another rank's step loop)");
        }
    } catch (...) {
        fail_fatally(std::current_exception());
    }
}

int StopVote::after_step() {
    Vote& vote = votes_[next_];  // the oldest in flight: posted `lag` steps ago
    next_ = (next_ + 1) % votes_.size();
    if (vote.request != MPI_REQUEST_NULL) {
        // Not MPI_Wait: see wait_all, which also bounds the wait by timeout_s.
        wait_all(&vote.request, 1, timeout_, "the stop vote (another rank's step loop)");
        if (vote.agreed != 0) return vote.agreed;
    }
    vote.sent = stop_signal();
    MPI_CHECK(MPI_Iallreduce(&vote.sent, &vote.agreed, 1, MPI_INT, MPI_MAX, comm_, &vote.request));
    return 0;
}

}  // namespace gpurelay
