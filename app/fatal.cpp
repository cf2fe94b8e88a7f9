#include "app/fatal.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace gpurelay {
namespace {

// The run's watch while it exists; a handler may read it from any thread.
std::atomic<const StepWatch*> watched{nullptr};

}  // namespace

StepWatch::StepWatch() noexcept { watched = this; }

StepWatch::~StepWatch() { watched = nullptr; }

void abort_job(const Error& error) noexcept {
    claim_process_end();
    const StepWatch* watch = watched.load();
    const std::int64_t step = watch != nullptr ? watch->step() : -1;
    char where[96] = "";
    if (step >= 0) {
        std::snprintf(where, sizeof where, " at step %lld (overlap %s pass)",
                      static_cast<long long>(step), watch->overlap() ? "on" : "off");
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "gpurelay: error on rank %d%s: %s\n", rank, where, error.what());
    std::fflush(stderr);
    // MPI_Abort may run exit handlers, and the CUDA runtime's can wait for a kernel that never
    // ends; this rank ends regardless after a grace period.
    const int code = static_cast<int>(error.code());
    std::thread([code] {
        std::this_thread::sleep_for(std::chrono::seconds(10));
        std::_Exit(code);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
}

}  // namespace gpurelay
