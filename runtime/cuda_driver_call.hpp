// CUDA driver functions found through the runtime, so that the program does not link libcuda
// (CPU-only machines run this build too), and the check of what they return. CUDA builds only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <string>

#include "runtime/error.hpp"

namespace gpurelay {

// Sets `function` to the driver's `name` (as of CUDA 12.0); false where the driver lacks it.
template <typename F>
bool find_driver_call(const char* name, F& function) {
    cudaDriverEntryPointQueryResult result{};
    void* found = nullptr;
    if (cudaGetDriverEntryPointByVersion(name, &found, 12000, cudaEnableDefault, &result) !=
            cudaSuccess ||
        result != cudaDriverEntryPointSuccess || found == nullptr) {
        cudaGetLastError();
        return false;
    }
    function = reinterpret_cast<F>(found);
    return true;
}

// Throws a runtime error naming `call` unless `result` is success.
inline void driver_check(CUresult result, const char* call) {
    if (result == CUDA_SUCCESS) return;
    throw runtime_error(std::string("CUDA driver error in ") + call + ": code " +
                        std::to_string(static_cast<int>(result)));
}

// Stream memory ops: the GPU's front end (no SM or host thread) waits for a 32-bit word or sets it.
struct StreamMemOps {
    PFN_cuStreamWaitValue32_v11070 wait = nullptr;
    PFN_cuStreamWriteValue32_v11070 write = nullptr;

    // Throws a runtime error naming `user` where the driver lacks them.
    static const StreamMemOps& get(const char* user) {
        static const StreamMemOps ops = [] {
            StreamMemOps found;
            if (!find_driver_call("cuStreamWaitValue32", found.wait) ||
                !find_driver_call("cuStreamWriteValue32", found.write)) {
                found = {};
            }
            return found;
        }();
        if (ops.wait == nullptr) {
            throw runtime_error(std::string(user) +
                                ": the CUDA driver has no stream memory operations");
        }
        return ops;
    }
};

}  // namespace gpurelay
