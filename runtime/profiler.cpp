#include "runtime/profiler.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "runtime/error.hpp"
#endif

namespace gpurelay {

#if defined(GPURELAY_HAVE_CUDA)
void profiler_start(Backend backend) {
    if (backend == Backend::cuda) CUDA_CHECK(cudaProfilerStart());
}
void profiler_stop(Backend backend) {
    if (backend == Backend::cuda) CUDA_CHECK(cudaProfilerStop());
}
#else
void profiler_start(Backend) {}
void profiler_stop(Backend) {}
#endif

}  // namespace gpurelay
