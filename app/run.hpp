// The whole program between main() and the exit code: configuration, set-up agreed by every rank,
// the passes of the pipeline, the report and the output files.
#pragma once

namespace gpurelay {

// Returns the process exit code (see ExitCode); ends the job with MPI_Abort on errors that only
// some ranks see.
int run_gpurelay(int argc, char** argv);

}  // namespace gpurelay
