#include "comm/mpi_wait.hpp"

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>
#include <thread>

#include "comm/mpi_error.hpp"
#include "runtime/error.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

std::atomic<std::chrono::milliseconds::rep> process_wait_timeout{300000};

// Deadlines of the waits in progress, checked by one thread for the whole process.
class Watchdog {
  public:
    using Clock = std::chrono::steady_clock;
    struct Entry {
        Clock::time_point deadline;
        std::chrono::milliseconds timeout;
        std::string what;
    };

    static Watchdog& instance() {
        static Watchdog* watchdog = new Watchdog();  // never destroyed: its thread runs to exit
        return *watchdog;
    }

    std::list<Entry>::iterator arm(std::chrono::milliseconds timeout, const std::string& what) {
        std::lock_guard lock(mutex_);
        return entries_.insert(entries_.end(), {Clock::now() + timeout, timeout, what});
    }
    void disarm(std::list<Entry>::iterator entry) {
        std::lock_guard lock(mutex_);
        entries_.erase(entry);
    }

  private:
    Watchdog() : thread_([this] { run(); }) { thread_.detach(); }

    void run() {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            std::unique_lock lock(mutex_);
            for (const Entry& entry : entries_) {
                if (Clock::now() > entry.deadline) {
                    const Error error = timeout_error(entry.what, entry.timeout);
                    lock.unlock();
                    fail_fatally(std::make_exception_ptr(error));
                }
            }
        }
    }

    std::mutex mutex_;
    std::list<Entry> entries_;
    std::thread thread_;
};

}  // namespace

struct Deadline::Entry {
    std::list<Watchdog::Entry>::iterator position;
};

void set_wait_timeout(std::chrono::milliseconds timeout) {
    process_wait_timeout.store(timeout.count());
}

std::chrono::milliseconds wait_timeout() {
    return std::chrono::milliseconds(process_wait_timeout.load());
}

Deadline::Deadline(const std::string& what) : Deadline(wait_timeout(), what) {}

Deadline::Deadline(std::chrono::milliseconds timeout, const std::string& what)
    : entry_(std::make_unique<Entry>(Entry{Watchdog::instance().arm(timeout, what)})) {}

Deadline::~Deadline() { Watchdog::instance().disarm(entry_->position); }

void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what) {
    const Deadline deadline(timeout, what);
    int status = MPI_SUCCESS;
    poll_until(
        [&] {
            int done = 0;
            status = MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
            return done != 0 || status != MPI_SUCCESS;
        },
        std::chrono::steady_clock::time_point::max(),  // the watchdog bounds it
        {std::chrono::microseconds(200), std::chrono::microseconds(1000)});
    MPI_CHECK(status);
}

}  // namespace gpurelay
