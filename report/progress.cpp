#include "report/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace gpurelay {

Progress::Progress(bool enabled, std::int64_t total)
    : enabled_(enabled),
      tty_(::isatty(STDOUT_FILENO) != 0),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::step_done() {
    ++done_;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    if (since_last < (tty_ ? 0.5 : 10.0) && done_ != total_) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(done_) / std::max(elapsed, 1e-9);
    const double left = static_cast<double>(total_ - done_) / std::max(rate, 1e-9);
    std::printf("%sprogress: step %lld/%lld, %.1f steps/s, %.0f s left%s", tty_ ? "\r" : "",
                static_cast<long long>(done_), static_cast<long long>(total_), rate, left,
                tty_ ? (done_ == total_ ? "\n" : "") : "\n");
    std::fflush(stdout);
}

}  // namespace gpurelay
