// Resuming a stopped run: which .partial it continues and where, once it is known to match.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "io/output_lock.hpp"

namespace gpurelay {

// Where a resumed run starts (after the last completed step), or that the file is complete and
// only needs its final name.
struct ResumePoint {
    std::int64_t pass = 0;
    std::int64_t step = 0;
    std::int64_t complete = 0;
    std::int64_t verified = 0;
    // A run of several sizes: the size it stopped in (its index), and how many of the sizes
    // before it failed verification.
    std::int64_t size = 0;
    std::int64_t sizes_failed = 0;
    // Rank 0 only: this launch's start, and the file's `launches` before it (a JSON array), to
    // which the close adds this launch.
    std::string started_utc = {};
    std::string launches = "[]";
};

// Rank 0, before the file is opened collectively: a usage error when there is nothing to resume,
// a key that may not differ on resume differs, the file was not stopped by a signal, or ("damaged
// .partial") an attribute is unreadable, missing or out of range.
ResumePoint find_resume_point(const Config& config);

// --resume without an output (rank 0): the default outputs' .partial (not in use) whose deck
// matches, this Slurm job's first, else the newest; sets config.output and returns its lock. A
// usage error when none matches, listing each with what differs and the command that resumes it.
OutputLock choose_partial_to_resume(Config& config);

// This program, every key not at its default, then --output PATH --resume, quoted for a shell.
std::string resume_command(const Config& config);

}  // namespace gpurelay
