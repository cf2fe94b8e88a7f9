#include "report/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gpurelay {

bool progress_in_place(bool stdout_is_terminal) {
    if (!stdout_is_terminal) return false;
    for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_JOB_ID"}) {
        if (std::getenv(variable) != nullptr) return false;
    }
    return true;
}

Progress::Progress(bool enabled, std::int64_t total, std::int64_t already_done)
    : enabled_(enabled),
      in_place_(progress_in_place(::isatty(STDOUT_FILENO) != 0)),
      total_(total),
      first_(already_done),
      done_(already_done),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::step_done() {
    ++done_;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    if (since_last < (in_place_ ? 0.5 : 10.0) && done_ != total_) return;
    last_ = now;
    // The rate of this run's steps only: a resumed run did not time the ones before.
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(done_ - first_) / std::max(elapsed, 1e-9);
    const double left = static_cast<double>(total_ - done_) / std::max(rate, 1e-9);
    fmt::print("{}progress: step {}/{}, {:.1f} steps/s, {:.0f} s left{}", in_place_ ? "\r" : "",
               done_, total_, rate, left, in_place_ ? (done_ == total_ ? "\n" : "") : "\n");
    std::fflush(stdout);
}

}  // namespace gpurelay
