// Progress on rank 0: a refreshed line when the process is alone on a terminal, whole lines every
// 10 s otherwise (a batch log, or a launcher's pseudo-terminal).
#pragma once

#include <chrono>
#include <cstdint>

namespace gpurelay {

// Whether the progress line may be redrawn in place with carriage returns: stdout is a
// terminal and no launcher stands between it and the user. Under Open MPI (OMPI_COMM_WORLD_SIZE),
// PMIx (PMIX_RANK) or Slurm (SLURM_JOB_ID) the terminal may be the launcher's pseudo-terminal,
// forwarded into a batch log, where each redraw would pile onto one garbled line.
bool progress_in_place(bool stdout_is_terminal);

class Progress {
  public:
    // `enabled`: print at all (rank 0, not quiet); `total`: the steps of every pass;
    // `already_done`: those a resumed run did before it stopped (counted as done, not timed).
    Progress(bool enabled, std::int64_t total, std::int64_t already_done = 0);
    // One more step done; prints when the line is due.
    void step_done();

  private:
    bool enabled_, in_place_;
    std::int64_t total_, first_, done_;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gpurelay
