#include "io/result_writer.hpp"

#include <chrono>

#include "runtime/error.hpp"

namespace gpurelay {

ResultWriter::ResultWriter(Device& device, ResultFile& file, std::uint64_t pair,
                           std::size_t row_bytes, int buffers, RowCheck check)
    : device_(device),
      file_(file),
      pair_(pair),
      capacity_(row_bytes),
      row_bytes_(row_bytes),
      check_(std::move(check)) {
    for (int i = 0; i < buffers; ++i) {
        staging_.push_back(device.allocate_host(row_bytes));
        ready_.push_back(device.make_event(EventUse::ordering));
        free_.push_back(i);
    }
    thread_ = std::thread([this] { run(); });
}

ResultWriter::~ResultWriter() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

ResultWriter::Slot ResultWriter::acquire() {
    std::unique_lock lock(mutex_);
    if (free_.empty()) {
        const auto start = std::chrono::steady_clock::now();
        changed_.wait(lock, [this] { return !free_.empty(); });
        waited_ms_ +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
    }
    const int index = free_.back();
    free_.pop_back();
    return {index, staging_[static_cast<std::size_t>(index)].data(),
            ready_[static_cast<std::size_t>(index)].get()};
}

void ResultWriter::submit(const Slot& slot, std::uint64_t row, std::int64_t step) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back({slot.index, row, step});
        ++in_flight_;
    }
    changed_.notify_all();
}

void ResultWriter::drain() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return in_flight_ == 0; });
}

void ResultWriter::switch_rows(std::size_t set, std::size_t row_bytes, RowCheck check) {
    if (row_bytes > capacity_) {
        throw runtime_error("result writer: rows of " + std::to_string(row_bytes) +
                            " bytes, but its buffers hold " + std::to_string(capacity_));
    }
    drain();
    std::lock_guard lock(mutex_);
    set_ = set;
    row_bytes_ = row_bytes;
    check_ = std::move(check);
}

void ResultWriter::run() {
    try {
        device_.make_current();
        std::unique_lock lock(mutex_);
        for (;;) {
            changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            const Job job = jobs_.front();
            jobs_.pop_front();
            lock.unlock();
            const auto index = static_cast<std::size_t>(job.index);
            ready_[index]->synchronize();
            const auto start = std::chrono::steady_clock::now();
            const RowCheckResult found =
                check_ ? check_(staging_[index].data(), job.step) : RowCheckResult{};
            file_.write_y_row(set_, pair_, job.row, staging_[index].data());
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            lock.lock();
            write_seconds_ += seconds;
            bytes_written_ += row_bytes_;
            checked_ += found.checked;
            mismatches_ += found.mismatches;
            free_.push_back(job.index);
            --in_flight_;
            changed_.notify_all();
        }
    } catch (...) {
        // A failed write cannot be returned to the pipeline thread in time; end the job cleanly.
        fail_fatally(std::current_exception());
    }
}

}  // namespace gpurelay
