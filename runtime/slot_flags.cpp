#include "runtime/slot_flags.hpp"

#include <condition_variable>
#include <mutex>

#include "runtime/error.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

// One wake-up for every word of the process: stores are a few per message, and a waiter whose
// word did not change goes back to sleep.
std::mutex& wake_mutex() {
    static std::mutex mutex;
    return mutex;
}
std::condition_variable& woken() {
    static std::condition_variable changed;
    return changed;
}

}  // namespace

void wake_host_waiters() {
    // Taken after the store: a waiter between its look and its pause holds the mutex, so the
    // store comes before its look or the wake-up after its pause has begun.
    { const std::lock_guard lock(wake_mutex()); }
    woken().notify_all();
}

bool wait_on_host(const std::uint32_t* word, std::uint32_t value,
                  std::chrono::steady_clock::time_point deadline,
                  std::chrono::microseconds longest_pause) {
    const auto look = [&] { return reached(load_acquire(word), value); };
    const auto pause = [&](std::chrono::microseconds length) {
        std::unique_lock lock(wake_mutex());
        woken().wait_for(lock, length, look);
    };
    return poll_until(look, deadline, {std::chrono::microseconds(100), longest_pause}, pause);
}

void wait_until(const std::uint32_t* word, std::uint32_t value, std::chrono::milliseconds timeout,
                const char* what, std::chrono::microseconds longest_pause) {
    if (!wait_on_host(word, value, std::chrono::steady_clock::now() + timeout, longest_pause)) {
        throw timeout_error(what, timeout);
    }
}

}  // namespace gpurelay
