#include "bench/handoff_floor.hpp"
#include "kernels/kernels_cuda.hpp"
#include "runtime/error.hpp"

namespace gpurelay::bench {
namespace {

// A round trip is two hand-offs; the first side stamps the timed ones.
__global__ void handoff_floor_kernel(HandOffFloor floor) {
    __shared__ SlotFlags flags;  // as a role's first block keeps its own
    if (threadIdx.x != 0) return;
    flags = floor.flags;
    std::uint64_t start = 0;
    for (std::uint32_t n = 1; n <= floor.warm + floor.rounds; ++n) {
        if (n == floor.warm + 1) start = now_ns();
        if (floor.starts) flags.signal(0);
        if (!flags.wait(0, now_ns() + floor.timeout_ns)) {
            store_release(floor.failed, 1u);
            return;
        }
        if (!floor.starts) flags.signal(0);
    }
    floor.home->uses[0] = flags.uses[0];
    if (floor.starts) store_release(floor.elapsed_ns, now_ns() - start);
}

}  // namespace

void run_handoff_floor(const HandOffFloor& floor, cudaStream_t stream) {
    // Loaded before the first launch: the other side's kernel may already spin (lazy loading,
    // kernels/handoff_cuda.cu).
    static const bool loaded =
        (cuda::load_kernels({reinterpret_cast<const void*>(handoff_floor_kernel)}), true);
    (void)loaded;
    handoff_floor_kernel<<<1, 32, 0, stream>>>(floor);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpurelay::bench
