// The clock sample from NVML: one session for the process, opened on first use; any failure
// leaves the figure unmeasured rather than failing the run.
#include <nvml.h>

#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

class NvmlSession {
  public:
    NvmlSession() : open_(nvmlInit_v2() == NVML_SUCCESS) {}
    ~NvmlSession() {
        if (open_) nvmlShutdown();
    }
    NvmlSession(const NvmlSession&) = delete;
    NvmlSession& operator=(const NvmlSession&) = delete;
    bool open() const { return open_; }

  private:
    bool open_;
};

}  // namespace

ClockSample sample_gpu_clocks(const std::string& pci_bus_id) {
    ClockSample sample;
    if (pci_bus_id.empty()) return sample;
    static NvmlSession session;  // nvmlInit costs milliseconds: once, not per sample
    nvmlDevice_t device{};
    if (!session.open() ||
        nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device) != NVML_SUCCESS) {
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
