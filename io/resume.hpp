// Resuming a run stopped by SIGTERM, SIGINT or SIGUSR1: which .partial file it continues, where it
// stopped, once the file is known to hold the results this run would reproduce.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "io/output_lock.hpp"

namespace gpurelay {

// Where a resumed run starts, read from the .partial file: the size, the pass and the step after
// the last completed one, or, when the file is already complete (its run ended between the close
// and the rename), that it only needs its final name.
struct ResumePoint {
    std::int64_t pass = 0;
    std::int64_t step = 0;
    std::int64_t complete = 0;
    std::int64_t verified = 0;
    // A run of several sizes: the size it stopped in (its index), and how many of the sizes
    // before it failed verification.
    std::int64_t size = 0;
    std::int64_t sizes_failed = 0;
    // Rank 0 only: when this launch read its command line, and the file's launches before it
    // (its `launches` attribute, a JSON array; "[]" for a new file), so that the close adds this
    // launch to them.
    std::string started_utc = {};
    std::string launches = "[]";
};

// Reads OUTPUT.partial's stored deck and stop point (rank 0 alone, before the file is opened
// collectively): a run continues only a file whose results it would reproduce. A usage error when
// there is nothing to resume, when a key that may not differ on resume differs (named with both
// values), when the file was not stopped by a signal, or ("damaged .partial") when an attribute
// is unreadable, missing or out of range.
ResumePoint find_resume_point(const Config& config);

// --resume without an output (rank 0 alone): of the newest default outputs' .partial files (not in
// use by a running job), the one whose stored deck `config` matches, this Slurm job's own first,
// else the newest; sets config.output to it and returns its lock, held. A usage error when none
// matches, listing each with its tag, start, steps done, the keys that differ and the command
// that resumes it.
OutputLock choose_partial_to_resume(Config& config);

// The command that continues `config.output` from its .partial: this program with every key of
// `config` that is not its default, then --output PATH --resume, quoted for a POSIX shell.
std::string resume_command(const Config& config);

}  // namespace gpurelay
