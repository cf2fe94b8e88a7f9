// The end of a run: the result file closed (complete, or PATH.partial when the ranks stopped), and
// on rank 0 what the user reads: the report, the JSON summary and the CSV rows, or where to resume.
#pragma once

#include <cstdint>
#include <vector>

#include "app/passes.hpp"
#include "report/reduce.hpp"

namespace gpurelay {

// Collective: closes the file as complete, and on rank 0 reports the sizes this launch ran to
// their end (the report or the table of sizes, the JSON and the CSV). Returns the exit code.
int finish(Run& run, const std::vector<RunSummary>& sizes, std::int64_t sizes_failed);

// Collective, stopped by SIGTERM/SIGINT/SIGUSR1: every completed step is in the file, which stays
// PATH.partial with complete = 0 and says where to resume; rank 0 says so. Returns the exit code.
int finish_stopped(Run& run, const Stop& stop);

}  // namespace gpurelay
