#include "runtime/host_word.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/error.hpp"

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

std::uint32_t load(const std::uint32_t* word) {
    return std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(word))
        .load(std::memory_order_acquire);
}

}  // namespace

bool word_reached(std::uint32_t word, std::uint32_t value) {
    return static_cast<std::int32_t>(word - value) >= 0;
}

void store_host_word(std::uint32_t* word, std::uint32_t value) {
    {
        // Under the mutex, so a waiter between its check and its sleep cannot miss the change.
        std::lock_guard lock(wake_mutex());
        std::atomic_ref<std::uint32_t>(*word).store(value, std::memory_order_release);
    }
    woken().notify_all();
}

void wait_host_word(const std::uint32_t* word, std::uint32_t value,
                    std::chrono::milliseconds timeout, const char* what) {
    // A small message's mark comes within microseconds: spin (yielding the core) that long
    // before paying a sleep's timer slack; then sleep in slices short beside a large piece's copy.
    constexpr auto kSpin = std::chrono::microseconds(50);
    constexpr auto kSlice = std::chrono::microseconds(100);
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    while (!word_reached(load(word), value)) {
        const auto now = std::chrono::steady_clock::now();
        if (now > deadline) throw timeout_error(what, timeout);
        if (now - start < kSpin) {
            std::this_thread::yield();
            continue;
        }
        std::unique_lock lock(wake_mutex());
        woken().wait_for(lock, kSlice, [&] { return word_reached(load(word), value); });
    }
}

}  // namespace gpurelay
