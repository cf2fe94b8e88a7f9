// The rule for every file a run writes (the HDF5 output, summary_json, results_csv): what may stand
// at the path, its folder, the names the run works under, free space. Each check runs on one rank
// (no MPI) and throws a usage error (exit 2) with the system's reason in words.
#pragma once

#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace gpurelay {

// `path` with every symbolic link on it followed, the last component too, so a check and the
// write after it act on the same file. An empty path, a link loop or an unreadable link is a
// usage error naming `key` (the config key, e.g. "output").
std::string resolve_output_path(const std::string& key, const std::string& path);

// Checks that a file can be written at `path` (resolved): its folder exists and takes new names
// (tried: root's rights do not show a /proc); `path` + each of `suffixes` (e.g. ".partial") fits
// the file system's name limit; and at `path` is nothing or a regular file. `replace_flag`: empty
// when an existing file may be replaced, else the flag that allows it ("--overwrite").
void check_output_target(const std::string& key, const std::string& path,
                         std::initializer_list<std::string_view> suffixes,
                         std::string_view replace_flag);

// Whether two resolved paths name the same file: the same device and inode when both exist, the
// same absolute text otherwise.
bool same_file(const std::string& a, const std::string& b);

// Checks that the file system would hold `bytes` at `path` (a name no one else uses) by reserving
// them (fallocate, then removed): a quota or a file size limit refuses here, before any file
// work, which free space alone would not show; where it cannot reserve, free space is compared.
void check_space_for(const std::string& key, const std::string& path, std::uint64_t bytes);

// The output of a run that names none: a new file per run, so that a command run again neither
// replaces the last result nor is refused over it: outputs/gpurelay-YYYYMMDD-HHMMSS[-jobJ][-N].h5,
// the local start time, the Slurm job, and a count from 2 where a run of the same second took it.
std::string default_output_path(std::time_t start, int count);

// "-jobJ" in a Slurm job (SLURM_JOB_ID a number), else empty: so that a default output names the
// job whose log and accounting go with it.
std::string slurm_job_suffix();

// The default outputs (as default_output_path names them, in outputs/) that have a .partial, the
// one written last first: what --resume without an output chooses from.
std::vector<std::string> default_partials();

// "12.3 MiB": a byte count for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace gpurelay
