// The device-driven hand-off's persistent kernels: one per role, running the role steps of
// handoff_protocol.hpp with a GPU's hands. Each block's first thread waits and counts while the
// block's other threads sit at a barrier (no issue slots taken from C), and every word a peer
// process writes or reads is ordered at system scope (libcu++'s atomic_ref): the peer may be
// another process on this GPU (MPS) or another GPU.
#include <algorithm>
#include <cuda/atomic>
#include <mutex>

#include "kernels/handoff_cuda.hpp"
#include "kernels/handoff_protocol.hpp"
#include "kernels/kernels_cuda.hpp"
#include "kernels/value_loops.cuh"
#include "runtime/error.hpp"

namespace gpurelay::cuda {
namespace {

template <typename T>
using SystemRef = ::cuda::atomic_ref<T, ::cuda::thread_scope_system>;

// The hands of one thread of a role's kernel (handoff_protocol.hpp says what each does).
struct CudaHands {
    __device__ std::uint64_t now() const {
        std::uint64_t ns;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
        return ns;
    }
    __device__ bool leads() const { return threadIdx.x == 0; }
    __device__ std::uint32_t block() const { return blockIdx.x; }
    __device__ void meet() const { __syncthreads(); }
    __device__ std::uint32_t tell(std::uint32_t value) const {
        __shared__ std::uint32_t told;
        if (threadIdx.x == 0) told = value;
        __syncthreads();
        const std::uint32_t out = told;
        __syncthreads();  // every thread has read it before the next tell writes it
        return out;
    }
    __device__ std::uint32_t load(const std::uint32_t* word) const {
        return SystemRef<std::uint32_t>(*const_cast<std::uint32_t*>(word))
            .load(::cuda::memory_order_acquire);
    }
    __device__ void store(std::uint32_t* word, std::uint32_t value) const {
        SystemRef<std::uint32_t>(*word).store(value, ::cuda::memory_order_release);
    }
    __device__ std::uint32_t peek(const std::uint32_t* word) const {
        return SystemRef<std::uint32_t>(*const_cast<std::uint32_t*>(word))
            .load(::cuda::memory_order_relaxed);
    }
    __device__ void nudge(std::uint32_t* word, std::uint32_t value) const {
        SystemRef<std::uint32_t>(*word).store(value, ::cuda::memory_order_relaxed);
    }
    __device__ void add(std::uint32_t* word, std::uint32_t value) const {
        SystemRef<std::uint32_t>(*word).fetch_add(value, ::cuda::memory_order_release);
    }
    __device__ bool claim(std::uint32_t* word) const {
        std::uint32_t expected = 0;
        return SystemRef<std::uint32_t>(*word).compare_exchange_strong(expected, 1u);
    }
    // Into the role's status, in pinned host memory: a release store the host's acquire pairs
    // with (no atomic read-modify-write there, which not every host link supports).
    template <typename V>
    __device__ void put(V* field, V value) const {
        SystemRef<V>(*field).store(value, ::cuda::memory_order_release);
    }
    // A tight loop of acquire loads: a hand-off's latency is the look after the store, and only
    // this thread of the block spins.
    __device__ bool wait(const std::uint32_t* word, std::uint32_t value,
                         std::uint64_t timeout_ns) const {
        const std::uint64_t start = now();
        while (!handoff::reached(load(word), value)) {
            if (now() - start > timeout_ns) return false;
        }
        return true;
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

template <typename T>
__global__ void __launch_bounds__(kHandOffThreads) producer_kernel(ProducerArgs<T> args) {
    CudaHands hands;
    handoff::run_role(hands, args.role,
                      [&](std::int64_t s) { return handoff::producer_step(hands, args, s); });
}

template <typename T>
__global__ void __launch_bounds__(kHandOffThreads) consumer_kernel(ConsumerArgs<T> args) {
    CudaHands hands;
    handoff::run_role(hands, args.role,
                      [&](std::int64_t s) { return handoff::consumer_step(hands, args, s); });
}

// The hand-off floor: one thread of a side passes a count back and forth with the other side's,
// through the same waits and stores a role's step makes, `warm` round trips and then `rounds`
// timed ones (the first side stamps them). A round trip is two hand-offs.
__global__ void handoff_floor_kernel(HandOffFloor floor) {
    const CudaHands hands;
    if (threadIdx.x != 0) return;
    std::uint64_t start = 0;
    for (std::uint32_t n = 1; n <= floor.warm + floor.rounds; ++n) {
        if (n == floor.warm + 1) start = hands.now();
        const std::uint32_t value = floor.base + n;
        if (floor.starts) hands.store(floor.write_to, value);
        if (!hands.wait(floor.wait_on, value, floor.timeout_ns)) {
            hands.put(floor.failed, 1u);
            return;
        }
        if (!floor.starts) hands.store(floor.write_to, value);
    }
    if (floor.starts) hands.put(floor.elapsed_ns, hands.now() - start);
}

int device_attribute(cudaDeviceAttr attribute) {
    int device = 0, value = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
    return value;
}

// How many blocks of `kernel` one SM holds at once.
template <typename Kernel>
int blocks_per_sm(Kernel kernel) {
    int blocks = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel,
                                                             static_cast<int>(kHandOffThreads), 0));
    return blocks;
}

}  // namespace

std::uint32_t sm_count() {
    return static_cast<std::uint32_t>(device_attribute(cudaDevAttrMultiProcessorCount));
}

// The fewer of the two kernels' per-SM occupancy, for both types: a producer's and a consumer's
// blocks then fit when their sum is at most this times the SMs.
std::uint64_t handoff_capacity() {
    const int least =
        std::min({blocks_per_sm(producer_kernel<float>), blocks_per_sm(producer_kernel<double>),
                  blocks_per_sm(consumer_kernel<float>), blocks_per_sm(consumer_kernel<double>)});
    return static_cast<std::uint64_t>(least) * sm_count();
}

namespace {

// CUDA loads a kernel at its first launch (lazy loading, the default since CUDA 12.2), and a load
// may wait for the kernels already running in the context to finish. A persistent role runs
// until its peer's kernel (or C, which a consumer waits for) has run: launched first, it would
// hold that load, and the peer, for ever. So every kernel a pass runs beside a role is loaded
// before the first role is queued.
void load_pass_kernels() {
    static std::once_flag loaded;
    std::call_once(loaded, [] {
        load_kernels({reinterpret_cast<const void*>(producer_kernel<float>),
                      reinterpret_cast<const void*>(producer_kernel<double>),
                      reinterpret_cast<const void*>(consumer_kernel<float>),
                      reinterpret_cast<const void*>(consumer_kernel<double>),
                      reinterpret_cast<const void*>(handoff_floor_kernel)});
        load_step_kernels();
    });
}

}  // namespace

void run_handoff_floor(const HandOffFloor& floor, cudaStream_t stream) {
    load_pass_kernels();
    handoff_floor_kernel<<<1, 32, 0, stream>>>(floor);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void run_producer_role(const ProducerArgs<T>& args, cudaStream_t stream) {
    load_pass_kernels();
    producer_kernel<T><<<args.role.blocks, kHandOffThreads, 0, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void run_consumer_role(const ConsumerArgs<T>& args, cudaStream_t stream) {
    load_pass_kernels();
    consumer_kernel<T><<<args.role.blocks, kHandOffThreads, 0, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
}

template void run_producer_role<float>(const ProducerArgs<float>&, cudaStream_t);
template void run_producer_role<double>(const ProducerArgs<double>&, cudaStream_t);
template void run_consumer_role<float>(const ConsumerArgs<float>&, cudaStream_t);
template void run_consumer_role<double>(const ConsumerArgs<double>&, cudaStream_t);

}  // namespace gpurelay::cuda
