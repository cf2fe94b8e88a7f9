// NVML's clock sample, one session per process opened on first use; failures leave it unmeasured.
#include <nvml.h>

#include <cstdlib>

#include "runtime/gpu_clocks.hpp"

namespace gpurelay {

ClockSample sample_gpu_clocks(const std::string& pci_bus_id) {
    ClockSample sample;
    if (pci_bus_id.empty()) return sample;
    // nvmlInit costs milliseconds: once, not per sample, shut down at exit.
    static const bool open = [] {
        if (nvmlInit_v2() != NVML_SUCCESS) return false;
        std::atexit([] { nvmlShutdown(); });
        return true;
    }();
    nvmlDevice_t device{};
    if (!open || nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device) != NVML_SUCCESS) {
        return sample;
    }
    unsigned int mhz = 0;
    if (nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, &mhz) != NVML_SUCCESS) return sample;
    sample.measured = true;
    sample.sm_mhz = mhz;
    if (nvmlDeviceGetMaxClockInfo(device, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) {
        sample.sm_max_mhz = mhz;
    }
    unsigned long long reasons = 0;
    if (nvmlDeviceGetCurrentClocksEventReasons(device, &reasons) == NVML_SUCCESS) {
        sample.reasons = reasons;
    }
    return sample;
}

}  // namespace gpurelay
