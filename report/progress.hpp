// Progress on rank 0: a refreshed line on a terminal, a line every 10 s in a batch log.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpurelay {

class Progress {
  public:
    // `enabled`: print at all (rank 0, not quiet); `total`: the steps of every pass.
    Progress(bool enabled, std::int64_t total);
    // One more step done; prints when the line is due.
    void step_done();

  private:
    bool enabled_, tty_;
    std::int64_t total_, done_ = 0;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gpurelay
