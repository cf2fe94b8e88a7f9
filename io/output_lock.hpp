// Two jobs must never write one output: the first holds an advisory lock (flock) on PATH.lock for
// its whole run, and the file names the holder, so a second job is refused at start with who has
// it. The kernel drops the lock with the process however it ends (a crash, SIGKILL), so a lock
// file left behind is free for the next run; on NFS, Linux maps flock to the server's locks.
#pragma once

#include <optional>
#include <string>

namespace gpurelay {

class OutputLock {
  public:
    OutputLock() noexcept = default;
    // Takes the lock of output `path` (resolved) or throws a usage error: "output 'PATH' is in use
    // by another gpurelay job (host H, pid P, since T)", or the system's reason when PATH.lock
    // cannot be made.
    static OutputLock acquire(const std::string& path);
    // The same, but nothing when another job holds the lock (a name taken meanwhile), with
    // `holder` (when given) set to who holds it.
    static std::optional<OutputLock> try_acquire(const std::string& path,
                                                 std::string* holder = nullptr);
    // Removes PATH.lock while still holding it, then lets go.
    ~OutputLock();
    OutputLock(OutputLock&& other) noexcept;
    OutputLock& operator=(OutputLock&& other) noexcept;
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

    // Whether this holds a lock (a default-made or moved-from one holds none).
    bool held() const noexcept { return fd_ >= 0; }

  private:
    OutputLock(int fd, std::string lock_path) noexcept
        : fd_(fd), lock_path_(std::move(lock_path)) {}
    void release() noexcept;
    int fd_ = -1;
    std::string lock_path_;
};

}  // namespace gpurelay
