#include "io/output_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

std::string holder_text() {
    char host[256] = "unknown";
    ::gethostname(host, sizeof host - 1);
    const std::time_t now = std::time(nullptr);
    char since[32];
    std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return std::string("host ") + host + ", pid " + std::to_string(::getpid()) + ", since " + since;
}

std::string read_holder(int fd) {
    char text[512] = {};
    const ssize_t length = ::pread(fd, text, sizeof text - 1, 0);
    std::string holder(text, length > 0 ? static_cast<std::size_t>(length) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    return holder.empty() ? "a job that is still starting" : holder;
}

}  // namespace

OutputLock OutputLock::acquire(const std::string& path) {
    std::string holder;
    std::optional<OutputLock> lock = try_acquire(path, &holder);
    if (!lock) {
        throw usage_error("output '" + path + "' is in use by another gpurelay job (" + holder +
                          "); wait for it to end or choose another --output");
    }
    return std::move(*lock);
}

std::optional<OutputLock> OutputLock::try_acquire(const std::string& path, std::string* holder) {
    const std::string name = path + ".lock";
    // The holder removes the file as it lets go: a file opened just before that removal is
    // locked in vain, so the lock counts only if the name still leads to the locked file.
    for (int attempt = 0; attempt < 100; ++attempt) {
        const int fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            throw usage_error("output: cannot make the lock file '" + name +
                              "': " + std::strerror(errno));
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int error = errno;
            if (error == EWOULDBLOCK) {
                if (holder != nullptr) *holder = read_holder(fd);
                ::close(fd);
                return std::nullopt;
            }
            ::close(fd);
            throw usage_error("output: cannot lock '" + name + "': " + std::strerror(error));
        }
        struct stat held = {}, named = {};
        if (::fstat(fd, &held) == 0 && ::stat(name.c_str(), &named) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
            const std::string mine = holder_text() + "\n";
            if (::ftruncate(fd, 0) != 0 ||
                ::pwrite(fd, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size())) {
                const int error = errno;
                ::unlink(name.c_str());
                ::close(fd);
                throw usage_error("output: cannot write the lock file '" + name +
                                  "': " + std::strerror(error));
            }
            return OutputLock(fd, name);
        }
        ::close(fd);
    }
    throw usage_error("output: the lock file '" + name + "' keeps being replaced");
}

void OutputLock::release() noexcept {
    if (fd_ < 0) return;
    ::unlink(lock_path_.c_str());
    ::close(fd_);
    fd_ = -1;
}

OutputLock::~OutputLock() { release(); }

OutputLock::OutputLock(OutputLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), lock_path_(std::move(other.lock_path_)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::exchange(other.fd_, -1);
        lock_path_ = std::move(other.lock_path_);
    }
    return *this;
}

}  // namespace gpurelay
