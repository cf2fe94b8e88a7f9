// The rule for every file a run writes (output, summary_json, results_csv). Each check runs on
// one rank (no MPI) and throws a usage error (exit 2) with the system's reason in words.
#pragma once

#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace gpurelay {

// `path` with every symbolic link followed, so a check and the write after it act on the same
// file; a usage error naming `key` for an empty path, a link loop or an unreadable link.
std::string resolve_output_path(const std::string& key, const std::string& path);

// Its folder takes new names (tried: root's rights do not show a /proc); `path` + each suffix
// fits the name limit; `path` is nothing or a regular file. `replace_flag`: empty when an existing
// file may be replaced, else the flag that allows it ("--overwrite").
void check_output_target(const std::string& key, const std::string& path,
                         std::initializer_list<std::string_view> suffixes,
                         std::string_view replace_flag);

// Whether two resolved paths name the same file: the same device and inode when both exist, the
// same absolute text otherwise.
bool same_file(const std::string& a, const std::string& b);

// Reserves `bytes` at `path` (fallocate, then removed) so a quota or file size limit refuses
// before any file work, which free space alone would not show; else free space is compared.
void check_space_for(const std::string& key, const std::string& path, std::uint64_t bytes);

// A new file per run, so a command run again neither replaces nor is refused over the last:
// outputs/gpurelay-YYYYMMDD-HHMMSS[-jobJ][-N].h5 (local start time, Slurm job, a count from 2).
std::string default_output_path(std::time_t start, int count);

// "-jobJ" in a Slurm job (SLURM_JOB_ID a number), else empty.
std::string slurm_job_suffix();

// The default outputs that have a .partial, the one written last first.
std::vector<std::string> default_partials();

// "12.3 MiB": a byte count for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace gpurelay
