// Resuming a run stopped by SIGTERM, SIGINT or SIGUSR1: where it stopped, read from the .partial
// file it left, once the file is known to hold the results this run would reproduce.
#pragma once

#include <cstdint>

#include "config/config.hpp"

namespace gpurelay {

// Where a resumed run starts, read from the .partial file: the size, the pass and the step after
// the last completed one, or, when the file is already complete (its run ended between the close and the
// rename), that it only needs its final name.
struct ResumePoint {
    std::int64_t pass = 0;
    std::int64_t step = 0;
    std::int64_t complete = 0;
    std::int64_t verified = 0;
    // A run of several sizes: the size it stopped in (its index), and how many of the sizes
    // before it failed verification.
    std::int64_t size = 0;
    std::int64_t sizes_failed = 0;
};

// Reads OUTPUT.partial's stored deck and stop point (rank 0 alone, before the file is opened
// collectively). A usage error when there is nothing to resume, when a key that shapes /y and
// the verification differs from the stored deck, when the file was not stopped by a signal, or
// ("damaged .partial") when it cannot be read or an attribute is missing or out of range.
ResumePoint find_resume_point(const Config& config);

}  // namespace gpurelay
