// The rule for every file a run writes (the HDF5 output, summary_json, results_csv), in one place:
// what may stand at the path, its folder, the names the run works under, free space. Each check
// runs on one rank and throws a usage error (exit 2) with the system's reason in words; they need
// no MPI, so a caller wraps them in an agreement.
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
// (a file of a name no one uses is made there and removed: root's rights do not show a /proc);
// `path` and `path` + each of `suffixes` (the names it is written under, e.g. ".partial") fit the
// file system's name limit; and what stands at `path` is nothing, or a regular file that may be
// replaced. `replace_flag`: empty when an existing regular file may be replaced (or appended to),
// else the flag that allows it ("--overwrite"), named in the refusal. A directory, FIFO, socket
// or device is never replaced.
void check_output_target(const std::string& key, const std::string& path,
                         std::initializer_list<std::string_view> suffixes,
                         std::string_view replace_flag);

// Whether two resolved paths name the same file: the same device and inode when both exist, the
// same absolute text otherwise.
bool same_file(const std::string& a, const std::string& b);

// Bytes an unprivileged writer may still use on the file system that holds `path`'s folder.
std::uint64_t free_bytes_at(const std::string& path);

// Checks that the file system would hold `bytes` at `path` (a name no one else uses), by asking
// it to reserve them (fallocate, then the name is removed): a full disk, a quota or a file size
// limit refuses here, before any file work, which free space alone would not show. Where the
// file system cannot reserve, its free space is compared. A usage error for `key` with the
// figures and the system's reason.
void check_space_for(const std::string& key, const std::string& path, std::uint64_t bytes);

// The outputs of runs that name none (output = ""): a new file per run, so that a command run
// again neither replaces the last result nor is refused over it. Each is
// outputs/gpurelay-YYYYMMDD-HHMMSS[-jobJ][-N].h5: the local time the run starts, in a Slurm job
// its id (the file then names the job whose log and accounting go with it), and a count from 2
// where a run that started in the same second took the name.
std::string default_output_path(std::time_t start, int count);

// "-jobJ" in a Slurm job (SLURM_JOB_ID a number), else empty: what the default outputs' names
// carry, so that a file names the job whose log and accounting go with it.
std::string slurm_job_suffix();

// The default outputs (as default_output_path names them, in outputs/) that have a .partial, the
// one written last first: what --resume without an output chooses from.
std::vector<std::string> default_partials();

// "12.3 MiB": a byte count for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace gpurelay
