// timeout_s's default: how long a rank waits on a peer when no deck says otherwise. Written once
// here, below every library: Config takes it as the key's default (so the key table, --help and
// CONFIG.md show it), and every wait that has no deck to read (before the deck is read, in the
// benchmarks and the unit tests) is bounded by it.
#pragma once

#include <chrono>

namespace gpurelay {

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(300);

}  // namespace gpurelay
