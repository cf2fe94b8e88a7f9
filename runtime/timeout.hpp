// timeout_s's default, written once below every library: the key's default in Config (so the key
// table, --help and CONFIG.md show it), and the bound of every wait with no deck to read (before
// the deck is read, in the benchmarks and the unit tests).
#pragma once

#include <chrono>

namespace gpurelay {

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(300);

}  // namespace gpurelay
