// Single-process benchmarks of what a step is made of: kernels A, B, C and C's check on the GPU,
// next to the ceilings they are judged against (a device-to-device copy, pinned host copies, NCCL
// sending to itself), and the host twins of A and B on the CPU.
//
//   GPURELAY_BENCH_MAX_BYTES=16M bench_kernels --benchmark_filter=host
//
// GPU benchmarks are registered only when this build has CUDA and a GPU is present. Each GPU
// iteration is a batch of kGpuBatch launches queued back to back between two CUDA events
// (manual time: the batch's time over kGpuBatch), after one untimed warm-up. Timing one launch
// alone would also time the host's few microseconds of launching it while the GPU idles, which
// is latency, not bandwidth; kernels and copies are batched alike.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kernels_host.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include <cuda_runtime.h>

#include "bench/plain_nccl_comm.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay::bench {
namespace {

constexpr std::uint64_t kStep = 7;
constexpr std::uint32_t kSeed = 20240611;
constexpr float kAlpha = 0.5f;
// The app's default c_iterations, so C's rate here matches a default run.
constexpr std::uint32_t kCIterations = 64;
// The host twins are slow; beyond this they only take time without telling more.
constexpr std::size_t kHostMaxBytes = std::size_t{64} << 20;

// Everything the GPU benchmarks share, allocated once at the largest size: pinned allocations of a
// GiB take long enough to distort a benchmark that made its own.
struct GpuBench {
    explicit GpuBench(std::size_t max_bytes)
        : device(make_cuda_device(0)),
          stream(device->make_stream(false, "bench")),
          start(device->make_event(EventUse::timing)),
          stop(device->make_event(EventUse::timing)),
          x(device->allocate(max_bytes)),
          y(device->allocate(max_bytes)),
          pinned(device->allocate_host(max_bytes)),
          counter(device->allocate(sizeof(Counter))),
          counter_host(device->allocate_host(sizeof(Counter))) {}

    Span<float> x_floats(std::size_t bytes) const { return {x.as<float>().data(), bytes / 4}; }
    Span<float> y_floats(std::size_t bytes) const { return {y.as<float>().data(), bytes / 4}; }
    Span<std::uint32_t> z_values(std::size_t bytes) const {
        return {y.as<std::uint32_t>().data(), bytes / 4};
    }

    // Zeroes the mismatch counter (in stream order) and returns it.
    Counter* reset_counter() {
        device->fill_async(counter.data(), 0, sizeof(Counter), *stream);
        return counter.as<Counter>().data();
    }
    // Waits for the stream and returns the mismatch counter.
    Counter read_counter() {
        device->copy_async(counter_host.data(), counter.data(), sizeof(Counter), *stream);
        stream->synchronize();
        return *counter_host.as<Counter>().data();
    }

    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> start;
    std::unique_ptr<Event> stop;
    Buffer x;        // A's output and B's input; the source of copies
    Buffer y;        // B's and C's output; the destination of copies
    Buffer pinned;   // the host side of H2D and D2H copies
    Buffer counter;  // mismatches found on the GPU
    Buffer counter_host;
#if defined(GPURELAY_HAVE_CUDA)
    // Made by the first NCCL benchmark; declared last so it goes before the buffers it used.
    std::unique_ptr<PlainNcclComm> nccl;  // one rank: the id never leaves this process
#endif
};

constexpr int kGpuBatch = 8;

// Times `work` (which queues on gpu.stream): kGpuBatch of it per iteration between events, after
// one warm-up; the iteration's time is one `work`'s share.
template <typename Work>
void time_on_gpu(benchmark::State& state, GpuBench& gpu, Work&& work) {
    work();
    gpu.stream->synchronize();
    for (auto _ : state) {
        gpu.start->record(*gpu.stream);
        for (int i = 0; i < kGpuBatch; ++i) work();
        gpu.stop->record(*gpu.stream);
        gpu.stop->synchronize();
        state.SetIterationTime(gpu.stop->elapsed_ms_since(*gpu.start) * 1e-3 / kGpuBatch);
    }
    state.counters["batch"] = kGpuBatch;
}

std::int64_t times(const benchmark::State& state, std::size_t bytes) {
    return static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes);
}

void gpu_a(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu, [&] { launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream); });
    state.SetBytesProcessed(times(state, bytes));  // written
}

void gpu_b(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    // B checks every x[i] against A's formula, so x must hold A's values.
    launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream);
    Counter* mismatches = gpu.reset_counter();
    time_on_gpu(state, gpu, [&] {
        launch_b(Span<const float>(gpu.x_floats(bytes)), gpu.y_floats(bytes), kAlpha, kStep, kSeed,
                 mismatches, *gpu.stream);
    });
    if (const Counter bad = gpu.read_counter(); bad != 0) {
        fail(state, "B found " + std::to_string(bad) + " values of x that differ from A's");
    }
    state.SetBytesProcessed(2 * times(state, bytes));  // read + written
}

void gpu_c(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu,
                [&] { launch_c(gpu.z_values(bytes), kStep, kSeed, kCIterations, *gpu.stream); });
    // C is compute-bound: its rate is generator steps, not bytes.
    state.SetItemsProcessed(times(state, bytes / 4) * kCIterations);
    state.counters["c_iterations"] = kCIterations;
}

void gpu_verify_c(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    launch_c(gpu.z_values(bytes), kStep, kSeed, kCIterations, *gpu.stream);
    Counter* mismatches = gpu.reset_counter();
    time_on_gpu(state, gpu, [&] {
        launch_verify_c(Span<const std::uint32_t>(gpu.z_values(bytes)), kStep, kSeed, kCIterations,
                        mismatches, *gpu.stream);
    });
    if (const Counter bad = gpu.read_counter(); bad != 0) {
        fail(state, "verify_c found " + std::to_string(bad) + " wrong values of C");
    }
    state.SetBytesProcessed(times(state, bytes));  // read
}

void gpu_copy_d2d(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu,
                [&] { gpu.device->copy_async(gpu.y.data(), gpu.x.data(), bytes, *gpu.stream); });
    state.SetBytesProcessed(2 * times(state, bytes));  // read + written, as B counts
}

void gpu_copy_h2d(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu, [&] {
        gpu.device->copy_async(gpu.x.data(), gpu.pinned.data(), bytes, *gpu.stream);
    });
    state.SetBytesProcessed(times(state, bytes));
}

void gpu_copy_d2h(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu, [&] {
        gpu.device->copy_async(gpu.pinned.data(), gpu.x.data(), bytes, *gpu.stream);
    });
    state.SetBytesProcessed(times(state, bytes));
}

#if defined(GPURELAY_HAVE_CUDA)
void gpu_nccl_self(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    if (!gpu.nccl) {
        try {
            gpu.nccl = std::make_unique<PlainNcclComm>(1, 0, PlainNcclComm::new_id());
        } catch (const std::exception& error) {
            fail(state, error.what());
            return;
        }
    }
    const ncclComm_t comm = gpu.nccl->get();
    const cudaStream_t stream = cuda_handle(*gpu.stream);
    launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream);
    gpu.device->fill_async(gpu.y.data(), 0xff, bytes, *gpu.stream);
    time_on_gpu(state, gpu, [&] {
        // A send to itself and its receive must share one group, or NCCL waits for ever.
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(gpu.x.data(), bytes, ncclChar, 0, comm, stream));
        NCCL_CHECK(ncclRecv(gpu.y.data(), bytes, ncclChar, 0, comm, stream));
        NCCL_CHECK(ncclGroupEnd());
    });
    // What arrived must be A's values: B (alpha 1, into x) counts those that are not.
    Counter* mismatches = gpu.reset_counter();
    launch_b(Span<const float>(gpu.y_floats(bytes)), gpu.x_floats(bytes), 1.0f, kStep, kSeed,
             mismatches, *gpu.stream);
    if (const Counter bad = gpu.read_counter(); bad != 0) {
        fail(state, "NCCL delivered " + std::to_string(bad) + " wrong values");
    }
    state.SetBytesProcessed(times(state, bytes));
}
#endif

void host_a(benchmark::State& state, std::size_t bytes) {
    std::vector<float> x(bytes / 4);
    host::run_a(Span<float>{x.data(), x.size()}, kStep, kSeed);  // warm-up: pages touched
    for (auto _ : state) {
        host::run_a(Span<float>{x.data(), x.size()}, kStep, kSeed);
        benchmark::DoNotOptimize(x.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(times(state, bytes));
}

void host_b(benchmark::State& state, std::size_t bytes) {
    std::vector<float> x(bytes / 4);
    std::vector<float> y(bytes / 4);
    host::run_a(Span<float>{x.data(), x.size()}, kStep, kSeed);
    Counter mismatches = 0;
    for (auto _ : state) {
        host::run_b(Span<const float>{x.data(), x.size()}, Span<float>{y.data(), y.size()}, kAlpha,
                    kStep, kSeed, &mismatches);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    if (mismatches != 0) {
        fail(state, "host B found " + std::to_string(mismatches) + " values of x that differ");
    }
    state.SetBytesProcessed(2 * times(state, bytes));
}

using GpuFn = void (*)(benchmark::State&, GpuBench&, std::size_t);

void register_gpu(GpuBench& gpu, const std::vector<std::size_t>& sizes) {
    std::vector<std::pair<const char*, GpuFn>> benchmarks = {
        {"gpu/a", gpu_a},
        {"gpu/b", gpu_b},
        {"gpu/verify_c", gpu_verify_c},
        {"gpu/c", gpu_c},
        {"gpu/copy_d2d", gpu_copy_d2d},
        {"gpu/copy_h2d", gpu_copy_h2d},
        {"gpu/copy_d2h", gpu_copy_d2h},
#if defined(GPURELAY_HAVE_CUDA)
        {"gpu/nccl_self", gpu_nccl_self},
#endif
    };
    for (const auto& [name, fn] : benchmarks) {
        for (const std::size_t bytes : sizes) {
            benchmark::RegisterBenchmark(
                name, [fn = fn, &gpu, bytes](benchmark::State& state) { fn(state, gpu, bytes); })
                ->Arg(static_cast<std::int64_t>(bytes))
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
        }
    }
}

void register_host(const std::vector<std::size_t>& sizes) {
    for (const std::size_t bytes : sizes) {
        if (bytes > kHostMaxBytes) break;
        benchmark::RegisterBenchmark("host/a", [bytes](benchmark::State& s) { host_a(s, bytes); })
            ->Arg(static_cast<std::int64_t>(bytes))
            ->Unit(benchmark::kMicrosecond);
    }
    for (const std::size_t bytes : sizes) {
        if (bytes > kHostMaxBytes) break;
        benchmark::RegisterBenchmark("host/b", [bytes](benchmark::State& s) { host_b(s, bytes); })
            ->Arg(static_cast<std::int64_t>(bytes))
            ->Unit(benchmark::kMicrosecond);
    }
}

int run(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return static_cast<int>(ExitCode::usage);
    const std::size_t max_bytes = max_bytes_from_env();
    const auto sizes = bench_sizes(max_bytes);

    add_provenance_context();
    benchmark::AddCustomContext("max_bytes", std::to_string(max_bytes));
    std::unique_ptr<GpuBench> gpu;
    if (cuda_device_count() > 0) {
        gpu = std::make_unique<GpuBench>(max_bytes);
        benchmark::AddCustomContext("device", gpu->device->info().name);
        register_gpu(*gpu, sizes);
    } else {
        benchmark::AddCustomContext("device", "host CPU");
        std::fprintf(stderr, "bench_kernels: %s; GPU benchmarks skipped\n",
                     cuda_built() ? "no GPU found" : "built without CUDA");
    }
    register_host(sizes);

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (any_failed()) {
        std::fprintf(stderr, "bench_kernels: a benchmark failed its check (see ERROR above)\n");
        return static_cast<int>(ExitCode::verification);
    }
    return 0;
}

}  // namespace
}  // namespace gpurelay::bench

int main(int argc, char** argv) {
    try {
        return gpurelay::bench::run(argc, argv);
    } catch (const gpurelay::Error& error) {
        std::fprintf(stderr, "bench_kernels: %s\n", error.what());
        return static_cast<int>(error.code());
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_kernels: %s\n", error.what());
        return static_cast<int>(gpurelay::ExitCode::runtime);
    }
}
