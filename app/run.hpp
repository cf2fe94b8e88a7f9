// The whole program between main() and the exit code: configuration, set-up agreed by every rank,
// the passes of the pipeline, the report and the output files.
#pragma once

namespace gpurelay {

// The exit code (ExitCode); an error only some ranks see ends the job with MPI_Abort.
int run_gpurelay(int argc, char** argv);

}  // namespace gpurelay
