#include "runtime/poll.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace gpurelay {
namespace {

std::mutex choice_mutex;
HostWaitChoice process_choice;
// Read on every pause, so kept apart from the reason's string.
std::atomic<HostWait> process_wait{HostWait::sparing};

}  // namespace

void set_host_wait(HostWaitChoice choice) {
    std::lock_guard lock(choice_mutex);
    process_wait.store(choice.wait);
    process_choice = std::move(choice);
}

HostWaitChoice host_wait() {
    std::lock_guard lock(choice_mutex);
    return process_choice;
}

const char* to_string(HostWait wait) { return wait == HostWait::prompt ? "prompt" : "sparing"; }

HostWait host_wait_for(bool cuda_path, int threads, int cores) {
    if (cuda_path) return HostWait::prompt;
    return cores > 0 && threads <= cores ? HostWait::prompt : HostWait::sparing;
}

bool poll_until(const std::function<bool()>& look, std::chrono::steady_clock::time_point deadline,
                PollPace pace, const std::function<void(std::chrono::microseconds)>& pause) {
    const auto start = std::chrono::steady_clock::now();
    const auto longest = process_wait.load() == HostWait::prompt
                             ? std::min(pace.longest_pause, kPromptPause)
                             : pace.longest_pause;
    auto next = std::min(longest, std::chrono::microseconds(10));
    for (;;) {
        if (look()) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now > deadline) return false;
        if (now - start < pace.spin) {
            std::this_thread::yield();
            continue;
        }
        if (pause) {
            pause(next);
        } else {
            std::this_thread::sleep_for(next);
        }
        next = std::min(longest, 2 * next);
    }
}

}  // namespace gpurelay
