// Progress on rank 0: a refreshed line when the process is alone on a terminal, whole lines every
// 10 s otherwise (a batch log, or a launcher's pseudo-terminal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gpurelay {

// Whether the progress line may be redrawn in place with carriage returns: stdout is a
// terminal and no launcher stands between it and the user. Under Open MPI (OMPI_COMM_WORLD_SIZE),
// PMIx (PMIX_RANK) or Slurm (SLURM_JOB_ID) the terminal may be the launcher's pseudo-terminal,
// forwarded into a batch log, where each redraw would pile onto one garbled line.
bool progress_in_place(bool stdout_is_terminal);

// Where a run is, as the progress line says it: its size (of several), its pass and the step in
// that pass, each counted from 1: "size 2 of 3, pass 2 of 2 (overlap=on), step 12 of 12".
// `passes`: each pass's overlap, in run order.
std::string progress_place(std::int64_t done, std::int64_t steps, const std::vector<bool>& passes,
                           std::int64_t sizes);

class Progress {
  public:
    // `enabled`: print at all (rank 0, not quiet); the run's shape: `steps` in each pass, the
    // passes' overlap in run order, `sizes` run in turn; `already_done`: the steps (over every pass
    // and size) a resumed run did before it stopped (counted as done, not timed).
    Progress(bool enabled, std::int64_t steps, std::vector<bool> passes, std::int64_t sizes,
             std::int64_t already_done = 0);
    // One more step done; prints when the line is due.
    void step_done();
    // A run with a duration (seconds from the start; 0: none): the time left is at most what
    // remains of it.
    void end_by(double duration_s);
    // The pass ended before its steps did (its share of the duration was up).
    void pass_ended();

  private:
    bool enabled_, in_place_;
    std::int64_t steps_;
    std::vector<bool> passes_;
    std::int64_t sizes_, total_, first_, done_;
    std::chrono::steady_clock::time_point start_, last_;
    double duration_s_ = 0;
};

}  // namespace gpurelay
