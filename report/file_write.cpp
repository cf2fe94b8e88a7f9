// Whole texts to files (write.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "report/number_text.hpp"
#include "report/write.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// The first line of the file open as `fd` (read from its start), or "" if it is empty.
std::string first_line(int fd) {
    std::string line;
    char ch = 0;
    for (off_t at = 0; ::pread(fd, &ch, 1, at) == 1 && ch != '\n'; ++at) line += ch;
    return line;
}

std::string header_mismatch(const std::string& path) {
    return "results_csv: '" + path +
           "' has other columns (written by another gpurelay version?); appending would put "
           "values under the wrong names: use a new file";
}

}  // namespace

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
    if (fd < 0) throw runtime_error("cannot create '" + temporary + "': " + std::strerror(errno));
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

std::string csv_number(double v) {
    return std::isnan(v) || v == 0.0 ? (v == 0.0 ? "0" : "") : number_text("{:.6g}", v);
}

std::string csv_text(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

void check_csv_header(const std::string& path, const std::string& header) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;  // not there yet (the folder was checked)
    const std::string found = first_line(fd);
    ::close(fd);
    if (!found.empty() && found != header) throw usage_error(header_mismatch(path));
}

void append_csv_rows(const std::string& path, const std::string& header, const std::string& rows) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        throw runtime_error("cannot open results CSV '" + path + "': " + std::strerror(errno));
    // The lock makes "is it empty? then write the header" and the append one step.
    ::flock(fd, LOCK_EX);
    const off_t before = ::lseek(fd, 0, SEEK_END);
    std::string text;
    if (before == 0) {
        text = header + "\n";
    } else if (first_line(fd) != header) {
        ::flock(fd, LOCK_UN);
        ::close(fd);
        throw runtime_error(header_mismatch(path));
    }
    text += rows;
    const bool written = write_all(fd, text) && ::fsync(fd) == 0;
    const int error = errno;
    // A row that did not fit is taken back: the file keeps only whole rows.
    if (!written && ::ftruncate(fd, before) != 0) {
        std::fprintf(stderr, "gpurelay: could not take back the partial row at the end of '%s'\n",
                     path.c_str());
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (!written) {
        throw runtime_error("cannot append to results CSV '" + path + "': " + std::strerror(error) +
                            " (the file is as it was)");
    }
}

}  // namespace gpurelay
