// The GPU's SM clock and why it is held down, from NVML (the CUDA build, where the toolkit has
// it). Fail soft: without NVML, on the CPU path, or when a call fails, the sample is unmeasured.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace gpurelay {

struct ClockSample {
    bool measured = false;
    double sm_mhz = std::numeric_limits<double>::quiet_NaN();      // now
    double sm_max_mhz = std::numeric_limits<double>::quiet_NaN();  // the most it can run at
    // NVML's clocks event (throttle) reasons, its bit mask, at the moment of the sample.
    std::uint64_t reasons = 0;
};

// The GPU `pci_bus_id` names ("0000:01:00.0"), now; unmeasured for an empty id.
ClockSample sample_gpu_clocks(const std::string& pci_bus_id);

// NVML's reason bits that slow the clock, named: "power cap, thermal (software)"; "" for none.
// The idle bit and the application clock setting are left out: they are not slowdowns.
std::string clock_slowdown_names(std::uint64_t reasons);

}  // namespace gpurelay
