// What a launch is asked to do: rank 0 reads the command line and the deck, checks the outputs,
// takes the output's lock and finds where a resumed run starts; every rank gets the outcome.
#pragma once

#include <optional>

#include "config/config.hpp"
#include "io/output_lock.hpp"
#include "io/resume.hpp"

namespace gpurelay {

struct Request {
    // The deck to run; none when the request is answered already (--help, --print-config, ...).
    std::optional<Config> config;
    ResumePoint resume;  // where a resumed run starts (every rank)
    // Held by rank 0 from the path checks to the end of the run: no second job on this output.
    OutputLock lock;
};

// Collective: rank 0 alone reads the deck and flags, checks the outputs, takes the lock and reads
// the resume point; every rank gets the outcome, and rank 0 answers --help and the like.
Request read_request(int rank, int argc, char** argv);

// Collective: --resume of a .partial that is already complete only gives it the name its run did
// not live to give it. Returns the exit code (of its verification).
int publish_complete(const Config& config, const ResumePoint& resume, int rank);

}  // namespace gpurelay
