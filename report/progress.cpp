// The progress line (render.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "report/render.hpp"

namespace gpurelay {

bool progress_in_place(bool stdout_is_terminal) {
    if (!stdout_is_terminal) return false;
    for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_JOB_ID"})
        if (std::getenv(variable) != nullptr) return false;
    return true;
}

std::string progress_place(std::int64_t done, std::int64_t steps, const std::vector<bool>& passes,
                           std::int64_t sizes) {
    const auto pass_count = static_cast<std::int64_t>(passes.size());
    // The step just done: its size, its pass in that size, its step in that pass (from 0).
    const std::int64_t last = std::max<std::int64_t>(done - 1, 0);
    const std::int64_t size = last / (steps * pass_count), pass = last / steps % pass_count;
    std::string place = sizes > 1 ? fmt::format("size {} of {}, ", size + 1, sizes) : "";
    place += pass_count > 1 ? fmt::format("pass {} of {} ({})", pass + 1, pass_count,
                                          pass_name(passes[static_cast<std::size_t>(pass)]))
                            : std::string(pass_name(passes.front())) + " pass";
    place += fmt::format(", step {}", done == 0 ? 0 : last % steps + 1);
    return steps == kNoStepLimit ? place : place + fmt::format(" of {}", steps);
}

Progress::Progress(bool enabled, std::int64_t steps, std::vector<bool> passes, std::int64_t sizes,
                   std::int64_t already_done)
    : enabled_(enabled),
      in_place_(progress_in_place(::isatty(STDOUT_FILENO) != 0)),
      steps_(steps),
      passes_(std::move(passes)),
      sizes_(sizes),
      total_(steps * static_cast<std::int64_t>(passes_.size()) * sizes),
      first_(already_done),
      done_(already_done) {}

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
    double left = static_cast<double>(total_ - done_) / std::max(rate, 1e-9);
    if (duration_s_ > 0) left = std::min(left, std::max(0.0, duration_s_ - elapsed));
    fmt::print("{}progress: {}; {:.1f} steps/s, {:.0f} s left{}", in_place_ ? "\r" : "",
               progress_place(done_, steps_, passes_, sizes_), rate, left,
               in_place_ ? (done_ == total_ ? "\n" : "") : "\n");
    std::fflush(stdout);
}

void Progress::end_by(double duration_s) { duration_s_ = duration_s; }

void Progress::pass_ended() { done_ = (done_ + steps_ - 1) / steps_ * steps_; }

}  // namespace gpurelay
