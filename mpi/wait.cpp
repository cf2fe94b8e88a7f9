#include "mpi/wait.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "mpi/error.hpp"
#include "runtime/error.hpp"
#include "runtime/poll.hpp"
#include "runtime/timeout.hpp"

namespace gpurelay {
namespace {

std::atomic<std::chrono::milliseconds::rep> process_wait_timeout{kDefaultTimeout.count()};

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

void transfer_pieces(void* data, std::size_t bytes, std::size_t piece, int peer, bool sending,
                     MPI_Comm comm, std::chrono::milliseconds timeout) {
    piece = std::min<std::size_t>(piece, INT_MAX);
    auto* p = static_cast<char*>(data);
    std::vector<MPI_Request> requests(std::max<std::size_t>(1, (bytes + piece - 1) / piece),
                                      MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const std::size_t offset = i * piece;
        const int n = static_cast<int>(std::min(piece, bytes - offset));
        if (sending) {
            MPI_CHECK(MPI_Isend(p + offset, n, MPI_BYTE, peer, 0, comm, &requests[i]));
        } else {
            MPI_CHECK(MPI_Irecv(p + offset, n, MPI_BYTE, peer, 0, comm, &requests[i]));
        }
    }
    wait_all(requests.data(), static_cast<int>(requests.size()), timeout,
             std::string(sending ? "MPI send to rank " : "MPI receive from rank ") +
                 std::to_string(peer));
}

}  // namespace gpurelay
