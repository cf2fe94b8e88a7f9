#include "io/output_path.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string_view>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

// Where the outputs of runs that name none go, relative to the working directory (a clone's
// outputs/, ignored by git), and how their names start.
constexpr const char* kDefaultOutputFolder = "outputs";
constexpr const char* kDefaultOutputPrefix = "gpurelay-";

std::string folder_of(const std::string& path) {
    const std::string folder = fs::path(path).parent_path().string();
    return folder.empty() ? "." : folder;
}

std::string reason(int error) { return std::strerror(error); }

// What stands at `path`, in words, for a refusal ("a directory", "a FIFO").
const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

// Makes and removes a file of a name no one else uses in `folder`; the errno of the failure, or 0.
int try_making_file_in(const std::string& folder) {
    const std::string probe = folder + "/.gpurelay-probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return errno == EEXIST ? 0 : errno;  // EEXIST: the folder does take names
    ::close(fd);
    ::unlink(probe.c_str());
    return 0;
}

// Bytes an unprivileged writer may still use on the file system that holds `path`'s folder.
std::uint64_t free_bytes_at(const std::string& path) {
    struct statvfs status {};
    if (::statvfs(folder_of(path).c_str(), &status) != 0) {
        throw usage_error("cannot see the free space of '" + folder_of(path) +
                          "': " + reason(errno));
    }
    return static_cast<std::uint64_t>(status.f_bavail) * status.f_frsize;
}

}  // namespace

std::string resolve_output_path(const std::string& key, const std::string& path) {
    if (path.empty()) throw usage_error(key + " must not be empty");
    // The folders on the way are the system's to follow; a link in the last place is followed
    // here, one hop at a time (its target may not exist yet, which canonical() refuses). 40 is
    // Linux's own limit (MAXSYMLINKS).
    fs::path current = path;
    for (int hops = 0; hops < 40; ++hops) {
        struct stat status {};
        if (::lstat(current.c_str(), &status) != 0 || !S_ISLNK(status.st_mode)) {
            return current.string();
        }
        std::error_code error;
        const fs::path target = fs::read_symlink(current, error);
        if (error) {
            throw usage_error(key + ": cannot read the link '" + current.string() +
                              "': " + error.message());
        }
        current = target.is_absolute() || current.parent_path().empty()
                      ? target
                      : current.parent_path() / target;
    }
    throw usage_error(key + ": '" + path + "' is a loop of symbolic links");
}

void check_output_target(const std::string& key, const std::string& path,
                         std::initializer_list<std::string_view> suffixes,
                         std::string_view replace_flag) {
    const std::string folder = folder_of(path);
    struct stat folder_status {};
    if (::stat(folder.c_str(), &folder_status) != 0) {
        const int error = errno;
        throw usage_error(
            key + ": folder '" + folder + "' " +
            (error == ENOENT ? std::string("does not exist") : "cannot be used: " + reason(error)));
    }
    if (!S_ISDIR(folder_status.st_mode)) {
        throw usage_error(key + ": '" + folder + "' is not a folder");
    }
    // AT_EACCESS: the rights this process writes with; a read-only file system refuses even root.
    // The rights say yes to root even where the file system itself says no (/proc, sysfs, a FUSE
    // mount): only making a file there tells.
    const int refused = ::faccessat(AT_FDCWD, folder.c_str(), W_OK | X_OK, AT_EACCESS) != 0
                            ? errno
                            : try_making_file_in(folder);
    if (refused != 0) {
        throw usage_error(key + ": folder '" + folder +
                          "' does not take new files: " + reason(refused));
    }
    const long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
    const std::string name = fs::path(path).filename().string();
    for (std::string_view suffix : suffixes) {
        const std::string working = name + std::string(suffix);
        if (name_max > 0 && working.size() > static_cast<std::size_t>(name_max)) {
            throw usage_error(key + ": the name '" + working + "' has " +
                              std::to_string(working.size()) + " bytes, over the " +
                              std::to_string(name_max) + " of '" + folder +
                              "': " + reason(ENAMETOOLONG));
        }
    }
    struct stat status {};
    if (::lstat(path.c_str(), &status) != 0) {
        const int error = errno;
        if (error == ENOENT) return;
        throw usage_error(key + ": '" + path + "' cannot be used: " + reason(error));
    }
    if (!S_ISREG(status.st_mode)) {
        throw usage_error(key + ": '" + path + "' is " + kind_of(status.st_mode) +
                          ": only a regular file is ever replaced");
    }
    if (!replace_flag.empty()) {
        throw usage_error(key + " file '" + path + "' exists (use " + std::string(replace_flag) +
                          " to replace it)");
    }
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat first = {}, second = {};
    if (::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0) {
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
    }
    std::error_code error;
    return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

void check_space_for(const std::string& key, const std::string& path, std::uint64_t bytes) {
    const std::uint64_t free = free_bytes_at(path);
    const auto refuse = [&](const std::string& why) {
        throw usage_error(key + ": the file needs " + format_bytes(bytes) + ", but '" +
                          folder_of(path) + "' has " + format_bytes(free) + " free" + why);
    };
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        throw usage_error(key + ": cannot make '" + path + "': " + reason(errno));
    }
    // fallocate(), not posix_fallocate(): where the file system cannot reserve, glibc's fallback
    // would write every byte.
    const int result = bytes == 0 ? 0 : ::fallocate(fd, 0, 0, static_cast<off_t>(bytes));
    const int error = result == 0 ? 0 : errno;
    ::close(fd);
    ::unlink(path.c_str());
    if (error == EOPNOTSUPP || error == ENOSYS) {
        if (bytes > free) refuse("");
        return;
    }
    if (error != 0) refuse(": " + reason(error));
}

std::string slurm_job_suffix() {
    const char* job = std::getenv("SLURM_JOB_ID");
    const std::string_view id = job != nullptr ? job : "";
    if (id.empty() ||
        !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return "";
    }
    return "-job" + std::string(id);
}

std::string default_output_path(std::time_t start, int count) {
    std::tm local{};
    ::localtime_r(&start, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
    std::string path =
        std::string(kDefaultOutputFolder) + "/" + kDefaultOutputPrefix + stamp + slurm_job_suffix();
    if (count > 1) path.append("-").append(std::to_string(count));
    return path.append(".h5");
}

std::vector<std::string> default_partials() {
    constexpr std::string_view kPartial = ".h5.partial";
    std::vector<std::pair<fs::file_time_type, std::string>> found;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(kDefaultOutputFolder, error)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(kDefaultOutputPrefix) || !name.ends_with(kPartial) ||
            !entry.is_regular_file(error)) {
            continue;
        }
        const fs::file_time_type written = entry.last_write_time(error);
        if (error) continue;
        found.emplace_back(written,
                           std::string(kDefaultOutputFolder) + "/" +
                               name.substr(0, name.size() - std::string_view(".partial").size()));
    }
    std::sort(found.begin(), found.end(), std::greater<>());
    std::vector<std::string> outputs;
    for (auto& [written, output] : found) outputs.push_back(std::move(output));
    return outputs;
}

std::string format_bytes(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
    return text;
}

}  // namespace gpurelay
