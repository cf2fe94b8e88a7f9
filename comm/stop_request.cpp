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
    if (request_ == MPI_REQUEST_NULL) return;
    try {
        wait_all(&request_, 1, timeout_, "the last stop vote (another rank's step loop)");
    } catch (...) {
        fail_fatally(std::current_exception());
    }
}

int StopVote::after_step() {
    if (request_ != MPI_REQUEST_NULL) {
        // Not MPI_Wait: see wait_all, which also bounds the wait by timeout_s.
        wait_all(&request_, 1, timeout_, "the stop vote (another rank's step loop)");
        if (agreed_ != 0) return agreed_;
    }
    sent_ = stop_signal();
    MPI_CHECK(MPI_Iallreduce(&sent_, &agreed_, 1, MPI_INT, MPI_MAX, comm_, &request_));
    return 0;
}

}  // namespace gpurelay
