// The run: every size of the run in turn through one pipeline, each size's passes (overlap off,
// then on, for compare), each pass filed and summarised, and the ranks' vote to stop.
#pragma once

#include <cstdint>
#include <vector>

#include "app/fatal.hpp"
#include "app/outputs.hpp"
#include "app/setup.hpp"
#include "io/resume.hpp"
#include "mpi/session.hpp"
#include "mpi/stop_request.hpp"
#include "pipeline/pipeline.hpp"
#include "report/render.hpp"

namespace gpurelay {

// The passes of each size, by overlap: compare runs without overlap first, then with; /y comes
// from the last pass.
std::vector<bool> passes_of(const Config& config);

// Where the passes ended: at the end, or after the step every rank agreed to stop on.
struct Stop {
    int signal = 0;  // SIGTERM, SIGINT or SIGUSR1; 0 when every pass ran to its end
    std::int64_t size = 0, pass = 0, step = 0;
    // Sizes of the run that ended and failed verification, those of an earlier launch included.
    std::int64_t sizes_failed = 0;
};

// What every size's passes share: the pipeline and the outputs, where a resumed run starts, the
// progress line, the ranks' stop vote and the step the fatal handler names.
struct Run {
    const MpiSession& mpi;
    const Setup& setup;
    Pipeline& pipeline;
    Outputs& outputs;
    const std::vector<bool>& passes;
    const ResumePoint& resume;
    int rank;
    Progress progress;
    StopVote stop_vote;
    StepWatch& watch;
    std::int64_t flushes = 0;       // periodic flushes so far
    std::int64_t passes_begun = 0;  // in this launch: the next pass's deadline (duration)
};

// Runs every size from where a resumed run stopped, each resized into the same pipeline; `done`
// gets the summary of each size that ran to its end in this launch.
Stop run_sizes(Run& run, std::vector<RunSummary>& done);

// Collective: one size's summary (valid on rank 0; its verdict on every rank), or with no passes
// the run's header.
RunSummary summarize(const MpiSession& mpi, const Setup& setup, const Config& config,
                     const Pipeline& pipeline, const Outputs& outputs,
                     std::vector<PassSummary> passes);

}  // namespace gpurelay
