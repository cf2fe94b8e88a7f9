// Whole texts to files: every byte or a clear error, and a file replaced only once its new
// contents are on disk (write_file_atomically, for the JSON summary).
#include "report/file_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "report/report.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string temporary = path + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        throw runtime_error("cannot create '" + temporary + "': " + std::strerror(errno));
    }
    bool written = write_all(fd, text) && ::fsync(fd) == 0;
    int error = errno;
    if (::close(fd) != 0 && written) {
        written = false;
        error = errno;
    }
    if (written && std::rename(temporary.c_str(), path.c_str()) == 0) return;
    if (written) error = errno;
    ::unlink(temporary.c_str());  // nothing half-written is left beside `path`
    throw runtime_error("cannot write '" + path + "': " + std::strerror(error) +
                        (written ? " (renaming its temporary file)" : ""));
}

}  // namespace gpurelay
