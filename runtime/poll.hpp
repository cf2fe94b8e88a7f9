// How a host thread waits on a thread, process or the GPU: it looks, yielding its core between
// looks (most waits end within microseconds), then sleeps in doubling pauses: `prompt` keeps each
// at ~50 us (timer slack), `sparing` grows them to the caller's longest (up to 1 ms) to leave
// working threads a core where threads outnumber cores. Late wake-ups compound: a relay stage
// waking late finds its next wait longer (docs/PERFORMANCE.md's relay section).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace gpurelay {

enum class HostWait { prompt, sparing };

// The longest pause of a wait under `prompt`.
inline constexpr std::chrono::microseconds kPromptPause{50};

// The policy and why, for the report; set once before the timed steps (until then `sparing`).
struct HostWaitChoice {
    HostWait wait = HostWait::sparing;
    std::string reason;
};
void set_host_wait(HostWaitChoice choice);
HostWaitChoice host_wait();
const char* to_string(HostWait wait);

// The rule `auto` applies. GPU path: `prompt`, as the hosts' threads only feed and wait for the GPU
// and a late wake-up idles it (the staged pair at 64 Mi, docs/PERFORMANCE.md's relay section). CPU
// path: `prompt` if every node has a core per working thread of its ranks (`threads` on the busiest
// node, `cores` the fewest any node's ranks may use; 0, unknown, is too few), else `sparing`.
HostWait host_wait_for(bool cuda_path, int threads, int cores);

// One wait: how long it yields before it sleeps, and its longest pause under `sparing`.
struct PollPace {
    std::chrono::microseconds spin{100};
    std::chrono::microseconds longest_pause{1000};
};

// Calls `look` until it returns true (then true) or `deadline` passes (then false). Between
// looks: a yield for the first `pace.spin`, then `pause(d)` (a sleep when empty) for d = 10 us,
// doubling up to the policy's longest pause. `pause` may return early (a wake-up).
bool poll_until(const std::function<bool()>& look, std::chrono::steady_clock::time_point deadline,
                PollPace pace,
                const std::function<void(std::chrono::microseconds)>& pause = nullptr);

}  // namespace gpurelay
