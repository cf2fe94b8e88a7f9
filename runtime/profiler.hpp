// The profiler capture range: what `nsys profile --capture-range=cudaProfilerApi` records.
#pragma once

#include "runtime/stream.hpp"

namespace gpurelay {

// cudaProfilerStart on the CUDA path; nothing on the CPU path or in a build without CUDA.
void profiler_start(Backend backend);
// cudaProfilerStop on the CUDA path; the caller first waits for the work it wants recorded.
void profiler_stop(Backend backend);

}  // namespace gpurelay
