// timeout_s's default, written once below every library: Config's default for the key (the key
// table, --help, CONFIG.md) and the bound of every wait with no deck read (benchmarks, unit tests).
#pragma once

#include <chrono>

namespace gpurelay {

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(300);

}  // namespace gpurelay
