// Writes rows of /y from a host thread behind the pipeline, through a bounded set of host staging
// buffers, so file I/O never stalls the streams; the pipeline waits only when every buffer is full.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "io/result_file.hpp"
#include "runtime/device.hpp"

namespace gpurelay {

class ResultWriter {
  public:
    struct RowCheckResult {  // elements sampled, and how many differ
        std::uint64_t checked = 0;
        std::uint64_t mismatches = 0;
    };
    using RowCheck = std::function<RowCheckResult(const void* row, std::int64_t step)>;

    ResultWriter(Device& device, ResultFile& file, std::uint64_t pair, std::size_t row_bytes,
                 int buffers, RowCheck check);
    ~ResultWriter();
    ResultWriter(const ResultWriter&) = delete;
    ResultWriter& operator=(const ResultWriter&) = delete;

    struct Slot {
        int index;
        void* host;    // where the row is copied to
        Event* ready;  // to be recorded on the stream after the copy
    };
    // A free staging buffer; blocks (counted as waiting on I/O) while all are queued or written.
    Slot acquire();
    // Once `slot.ready` is reached, the writer thread checks the row and writes it as row `row`.
    void submit(const Slot& slot, std::uint64_t row, std::int64_t step);
    void drain();  // blocks until every submitted row is in the file
    // Once drained: the rows from now on go to the file's `set`-th /y (a run of several sizes),
    // `row_bytes` each (at most the size the writer was made with), checked by `check`.
    void switch_rows(std::size_t set, std::size_t row_bytes, RowCheck check);

    // Totals since the writer was made (it serves every pass of a run).
    double waited_ms() const { return locked(waited_ms_); }
    double write_seconds() const { return locked(write_seconds_); }
    std::uint64_t bytes_written() const { return locked(bytes_written_); }
    // Elements sampled by the row checks (not rows).
    std::uint64_t checked() const { return locked(checked_); }
    std::uint64_t mismatches() const { return locked(mismatches_); }

  private:
    template <typename T>
    T locked(const T& total) const {
        std::lock_guard lock(mutex_);
        return total;
    }
    struct Job {
        int index;
        std::uint64_t row;
        std::int64_t step;
    };
    void run();

    Device& device_;
    ResultFile& file_;
    std::uint64_t pair_;
    std::size_t capacity_;  // each staging buffer's
    std::size_t set_ = 0;   // the /y rows go to
    std::size_t row_bytes_;
    RowCheck check_;
    std::vector<Buffer> staging_;
    std::vector<std::unique_ptr<Event>> ready_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<int> free_;
    std::deque<Job> jobs_;
    int in_flight_ = 0;
    bool stopping_ = false;
    double waited_ms_ = 0.0;
    double write_seconds_ = 0.0;
    std::uint64_t bytes_written_ = 0;
    std::uint64_t checked_ = 0;
    std::uint64_t mismatches_ = 0;
    std::thread thread_;
};

}  // namespace gpurelay
