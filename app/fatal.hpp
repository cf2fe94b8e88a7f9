// The fatal handler: an error no caller can catch (a stream's thread, a CUDA host function, a
// pass that cannot unwind) ends every rank of the job with one line naming the rank and the step.
#pragma once

#include <atomic>
#include <cstdint>

#include "runtime/error.hpp"

namespace gpurelay {

// The step this rank's host is queueing or waiting for, and its pass, which the fatal handler
// (from whichever thread fails) names while this exists: the program holds one for the whole run.
class StepWatch {
  public:
    StepWatch() noexcept;
    ~StepWatch();
    StepWatch(const StepWatch&) = delete;
    StepWatch& operator=(const StepWatch&) = delete;

    // A pass starts at `step` (its first, or where a resumed run continues).
    void start_pass(bool overlap, std::int64_t step) noexcept {
        overlap_ = overlap ? 1 : 0;
        step_ = step;
    }
    void at_step(std::int64_t step) noexcept { step_ = step; }
    // Outside the passes: the handler names no step.
    void leave_passes() noexcept { step_ = -1; }

    std::int64_t step() const noexcept { return step_.load(); }
    bool overlap() const noexcept { return overlap_.load() == 1; }

  private:
    std::atomic<std::int64_t> step_{-1};
    std::atomic<int> overlap_{-1};
};

// The handler: "gpurelay: error on rank R[ at step S (overlap on|off pass)]: MESSAGE", then
// MPI_Abort with the error's exit code, and this rank's end after a grace period regardless.
[[noreturn]] void abort_job(const Error& error) noexcept;

}  // namespace gpurelay
