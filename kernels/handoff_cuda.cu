// The roles' persistent kernels, running handoff_protocol.hpp's steps with a GPU's team and work.
// Each block's first thread waits and counts while its other threads sit at a barrier (no issue
// slots taken from C); every word a peer process writes or reads is ordered at system scope
// (runtime/slot_flags.hpp): the peer may be another process on this GPU (MPS) or another GPU.
#include <algorithm>
#include <mutex>

#include "kernels/handoff_protocol.hpp"
#include "kernels/kernels_cuda.hpp"
#include "kernels/value_loops.cuh"
#include "runtime/error.hpp"

namespace gpurelay::cuda {
namespace {

// The team of one thread of a role's kernel, and its work (handoff_protocol.hpp).
struct CudaHands {
    __device__ bool is_leader() const { return threadIdx.x == 0; }
    __device__ std::uint32_t block() const { return blockIdx.x; }
    __device__ void sync_block() const { __syncthreads(); }
    __device__ std::uint32_t broadcast_from_leader(std::uint32_t value) const {
        __shared__ std::uint32_t told;
        if (threadIdx.x == 0) told = value;
        __syncthreads();
        const std::uint32_t out = told;
        __syncthreads();  // every thread has read it before the next broadcast writes it
        return out;
    }
    template <typename T>
    __device__ void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed,
                          TensorForm form) const {
        fill_a(x, step, seed, form, grid_thread(), grid_threads());
    }
    template <typename T>
    __device__ void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step,
                          std::uint32_t seed, TensorForm expected, Counter* x_mismatches) const {
        const Counter bad =
            scale_b(x, y, alpha, step, seed, expected, grid_thread(), grid_threads());
        if (bad != 0) atomicAdd(x_mismatches, bad);
    }
};

// A kernel's parameters travel in its launch, at most 4 KiB of them.
static_assert(sizeof(ProducerArgs<double>) <= 4096 && sizeof(ConsumerArgs<double>) <= 4096,
              "a role's arguments must fit a kernel launch's parameters");

// A role's kernel (ProducerArgs or ConsumerArgs). The first block's leader keeps its copy of the
// side's flags in shared memory, where a step's counts are a few cycles away.
template <class Args>
__global__ void __launch_bounds__(kHandOffThreads) role_kernel(Args args) {
    __shared__ SlotFlags flags;
    CudaHands hands;
    handoff::run_role(hands, args, flags);
}

// How many blocks of `kernel` one SM holds at once.
template <typename Kernel>
int blocks_per_sm(Kernel kernel) {
    int blocks = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel,
                                                             static_cast<int>(kHandOffThreads), 0));
    return blocks;
}

// CUDA loads a kernel at its first launch (lazy loading, the default since CUDA 12.2), and a load
// may wait for the kernels running in the context to finish. A persistent role runs until its
// peer's kernel (or C, which a consumer waits for) has run, so launched first it would hold that
// load, and the peer, for ever: every kernel a pass runs beside a role is loaded before.
void load_pass_kernels() {
    static std::once_flag loaded;
    std::call_once(loaded, [] {
        load_kernels({reinterpret_cast<const void*>(role_kernel<ProducerArgs<float>>),
                      reinterpret_cast<const void*>(role_kernel<ProducerArgs<double>>),
                      reinterpret_cast<const void*>(role_kernel<ConsumerArgs<float>>),
                      reinterpret_cast<const void*>(role_kernel<ConsumerArgs<double>>)});
        load_step_kernels();
    });
}

}  // namespace

std::uint32_t sm_count() {
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return static_cast<std::uint32_t>(sms);
}

std::uint64_t handoff_capacity() {
    const int least = std::min({blocks_per_sm(role_kernel<ProducerArgs<float>>),
                                blocks_per_sm(role_kernel<ProducerArgs<double>>),
                                blocks_per_sm(role_kernel<ConsumerArgs<float>>),
                                blocks_per_sm(role_kernel<ConsumerArgs<double>>)});
    return static_cast<std::uint64_t>(least) * sm_count();
}

template <class Args>
void run_role(const Args& args, cudaStream_t stream) {
    load_pass_kernels();
    role_kernel<Args><<<args.role.blocks, kHandOffThreads, 0, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
}

template void run_role(const ProducerArgs<float>&, cudaStream_t);
template void run_role(const ProducerArgs<double>&, cudaStream_t);
template void run_role(const ConsumerArgs<float>&, cudaStream_t);
template void run_role(const ConsumerArgs<double>&, cudaStream_t);

}  // namespace gpurelay::cuda
