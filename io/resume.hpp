// Resuming a run stopped by SIGTERM or SIGINT: where it stopped, read from the .partial file it
// left, once the file is known to hold the results this run would reproduce.
#pragma once

#include <cstdint>

#include "config/config.hpp"

namespace gpurelay {

// What a resumed run reads from the .partial file: where it stopped.
struct ResumePoint {
    std::int64_t pass = 0;
    std::int64_t step = 0;
};

// Reads OUTPUT.partial's stored deck and stop point (rank 0 alone, before the file is opened
// collectively). A usage error when there is nothing to resume, when a key that shapes /y and
// the verification differs from the stored deck, or when the file was not stopped by a signal.
ResumePoint find_resume_point(const Config& config);

}  // namespace gpurelay
