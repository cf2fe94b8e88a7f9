// The reasons' names, in every build; the sample itself is NVML's (gpu_clocks_nvml.cpp) or none.
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

// NVML's nvmlClocksEventReason* bits (nvml.h), copied so the CPU build can name them too.
struct SlowdownBit {
    std::uint64_t bit;
    const char* name;
};
constexpr SlowdownBit kSlowdownBits[] = {{0x4, "power cap"},           {0x8, "hardware slowdown"},
                                         {0x10, "sync boost"},         {0x20, "thermal (software)"},
                                         {0x40, "thermal (hardware)"}, {0x80, "power brake"},
                                         {0x100, "display clock"}};

}  // namespace

std::string clock_slowdown_names(std::uint64_t reasons) {
    std::string names;
    for (const SlowdownBit& reason : kSlowdownBits) {
        if ((reasons & reason.bit) == 0) continue;
        if (!names.empty()) names += ", ";
        names += reason.name;
    }
    return names;
}

#ifndef GPURELAY_HAVE_NVML
ClockSample sample_gpu_clocks(const std::string&) { return {}; }
#endif

}  // namespace gpurelay
