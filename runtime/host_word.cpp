#include "runtime/host_word.hpp"

#include <algorithm>
#include <atomic>
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

bool reached(const std::uint32_t* word, std::uint32_t value) {
    return word_reached(std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(word))
                            .load(std::memory_order_acquire),
                        value);
}

}  // namespace

bool word_reached(std::uint32_t word, std::uint32_t value) {
    return static_cast<std::int32_t>(word - value) >= 0;
}

void store_host_word(std::uint32_t* word, std::uint32_t value) {
    {
        // Under the mutex, so a waiter between its look and its pause cannot miss the change.
        std::lock_guard lock(wake_mutex());
        std::atomic_ref<std::uint32_t>(*word).store(value, std::memory_order_release);
    }
    woken().notify_all();
}

void wait_host_word(const std::uint32_t* word, std::uint32_t value,
                    std::chrono::milliseconds timeout, const char* what,
                    std::chrono::microseconds longest_pause) {
    // A store_host_word in this process ends a pause at once.
    const auto pause = [&](std::chrono::microseconds length) {
        std::unique_lock lock(wake_mutex());
        woken().wait_for(lock, length, [&] { return reached(word, value); });
    };
    if (!poll_until([&] { return reached(word, value); },
                    std::chrono::steady_clock::now() + timeout,
                    {std::chrono::microseconds(100), longest_pause}, pause)) {
        throw timeout_error(what, timeout);
    }
}

}  // namespace gpurelay
