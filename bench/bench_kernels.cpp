// Single-process benchmarks of a step's parts: kernels A, B, C and C's check on the GPU beside
// their ceilings (a device copy, pinned host copies, NCCL to itself), and A and B's host twins.
// A GPU iteration is kGpuBatch launches between two events
// after an untimed warm-up: one launch alone would also time the host's launching, latency.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
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

// What the GPU benchmarks share, allocated once at the largest size (a GiB's pinned allocation
// would distort a benchmark that made its own).
struct GpuBench {
    explicit GpuBench(std::size_t max_bytes)
        : device(make_cuda_device(0)),
          stream(device->make_stream(false, "bench")),
          start(device->make_event(EventUse::timing)),
          stop(device->make_event(EventUse::timing)),
          x(device->allocate(max_bytes)),
          y(device->allocate(max_bytes)),
          pinned(device->allocate_host(max_bytes)),
          wrong(*device) {}

    Span<float> x_floats(std::size_t bytes) const { return {x.as<float>().data(), bytes / 4}; }
    Span<float> y_floats(std::size_t bytes) const { return {y.as<float>().data(), bytes / 4}; }
    Span<std::uint32_t> z_values(std::size_t bytes) const {
        return {y.as<std::uint32_t>().data(), bytes / 4};
    }

    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> start, stop;
    Buffer x;       // A's output and B's input; the source of copies
    Buffer y;       // B's and C's output; the destination of copies
    Buffer pinned;  // the host side of H2D and D2H copies
    WrongCount wrong;
#if defined(GPURELAY_HAVE_CUDA)
    // Made by the first NCCL benchmark; declared last so it goes before the buffers it used.
    std::unique_ptr<PlainNcclComm> nccl;  // one rank: the id never leaves this process
#endif
};

constexpr int kGpuBatch = 8;

// Times `work` on gpu.stream (given a zeroed count), kGpuBatch an iteration; returns the count.
template <typename Work>
Counter time_on_gpu(benchmark::State& state, GpuBench& gpu, Work&& work) {
    Counter* mismatches = gpu.wrong.reset(*gpu.stream);
    work(mismatches);
    gpu.stream->synchronize();
    for (auto _ : state) {
        gpu.start->record(*gpu.stream);
        for (int i = 0; i < kGpuBatch; ++i) work(mismatches);
        gpu.stop->record(*gpu.stream);
        gpu.stop->synchronize();
        state.SetIterationTime(gpu.stop->elapsed_ms_since(*gpu.start) * 1e-3 / kGpuBatch);
    }
    state.counters["batch"] = kGpuBatch;
    return gpu.wrong.read(*gpu.stream);
}

void gpu_a(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu,
                [&](Counter*) { launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream); });
    state.SetBytesProcessed(per_run(state, bytes));  // written
}

void gpu_b(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    // B checks every x[i] against A's formula, so x must hold A's values.
    launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream);
    const Counter bad = time_on_gpu(state, gpu, [&](Counter* mismatches) {
        launch_b(Span<const float>(gpu.x_floats(bytes)), gpu.y_floats(bytes), kAlpha, kStep, kSeed,
                 mismatches, *gpu.stream);
    });
    if (bad != 0)
        fail(state, "B found " + std::to_string(bad) + " values of x that differ from A's");
    state.SetBytesProcessed(2 * per_run(state, bytes));  // read + written
}

void gpu_c(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    time_on_gpu(state, gpu, [&](Counter*) {
        launch_c(gpu.z_values(bytes), kStep, kSeed, kCIterations, *gpu.stream);
    });
    // C is compute-bound: its rate is generator steps, not bytes.
    state.SetItemsProcessed(per_run(state, bytes / 4) * kCIterations);
    state.counters["c_iterations"] = kCIterations;
}

void gpu_verify_c(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    launch_c(gpu.z_values(bytes), kStep, kSeed, kCIterations, *gpu.stream);
    const Counter bad = time_on_gpu(state, gpu, [&](Counter* mismatches) {
        launch_verify_c(Span<const std::uint32_t>(gpu.z_values(bytes)), kStep, kSeed, kCIterations,
                        mismatches, *gpu.stream);
    });
    if (bad != 0) fail(state, "verify_c found " + std::to_string(bad) + " wrong values of C");
    state.SetBytesProcessed(per_run(state, bytes));  // read
}

// A copy of `bytes`, counted `sides` times (a device copy reads and writes them, as B counts).
void gpu_copy(benchmark::State& state, GpuBench& gpu, Buffer& dst, const Buffer& src, int sides,
              std::size_t bytes) {
    time_on_gpu(state, gpu, [&](Counter*) {
        gpu.device->copy_async(dst.data(), src.data(), bytes, *gpu.stream);
    });
    state.SetBytesProcessed(sides * per_run(state, bytes));
}

#if defined(GPURELAY_HAVE_CUDA)
void gpu_nccl_self(benchmark::State& state, GpuBench& gpu, std::size_t bytes) {
    if (!gpu.nccl) {
        try {
            gpu.nccl = std::make_unique<PlainNcclComm>(1, 0);
        } catch (const std::exception& error) {
            fail(state, error.what());
            return;
        }
    }
    const ncclComm_t comm = gpu.nccl->get();
    const cudaStream_t stream = cuda_handle(*gpu.stream);
    launch_a(gpu.x_floats(bytes), kStep, kSeed, *gpu.stream);
    gpu.device->fill_async(gpu.y.data(), 0xff, bytes, *gpu.stream);
    time_on_gpu(state, gpu, [&](Counter*) {
        // A send to itself and its receive must share one group, or NCCL waits for ever.
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(gpu.x.data(), bytes, ncclChar, 0, comm, stream));
        NCCL_CHECK(ncclRecv(gpu.y.data(), bytes, ncclChar, 0, comm, stream));
        NCCL_CHECK(ncclGroupEnd());
    });
    // What arrived must be A's values: B (alpha 1, into x) counts those that are not.
    if (const Counter bad =
            gpu.wrong.count_b(gpu.y_floats(bytes), gpu.x_floats(bytes), kStep, kSeed, *gpu.stream);
        bad != 0) {
        fail(state, "NCCL delivered " + std::to_string(bad) + " wrong values");
    }
    state.SetBytesProcessed(per_run(state, bytes));
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
    state.SetBytesProcessed(per_run(state, bytes));
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
    state.SetBytesProcessed(2 * per_run(state, bytes));
}

void register_sized(const char* name, const std::vector<std::size_t>& sizes, std::size_t max_bytes,
                    bool manual_time, const Body& body) {
    for (const std::size_t bytes : sizes) {
        if (bytes > max_bytes) break;
        auto* registered = benchmark::RegisterBenchmark(
            name, [body, bytes](benchmark::State& state) { body(state, bytes); });
        registered->Arg(static_cast<std::int64_t>(bytes))->Unit(benchmark::kMicrosecond);
        if (manual_time) registered->UseManualTime();
    }
}

void register_gpu(GpuBench& gpu, const std::vector<std::size_t>& sizes) {
    const auto copy = [&gpu](Buffer& dst, const Buffer& src, int sides) {
        return on(gpu, gpu_copy, std::ref(dst), std::cref(src), sides);
    };
    const std::pair<const char*, Body> benchmarks[] = {
        {"gpu/a", on(gpu, gpu_a)},
        {"gpu/b", on(gpu, gpu_b)},
        {"gpu/verify_c", on(gpu, gpu_verify_c)},
        {"gpu/c", on(gpu, gpu_c)},
        {"gpu/copy_d2d", copy(gpu.y, gpu.x, 2)},
        {"gpu/copy_h2d", copy(gpu.x, gpu.pinned, 1)},
        {"gpu/copy_d2h", copy(gpu.pinned, gpu.x, 1)},
#if defined(GPURELAY_HAVE_CUDA)
        {"gpu/nccl_self", on(gpu, gpu_nccl_self)},
#endif
    };
    for (const auto& [name, body] : benchmarks)
        register_sized(name, sizes, sizes.back(), true, body);
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
        std::fprintf(stderr, "bench_kernels: %s; GPU benchmarks skipped\n", no_gpu());
    }
    register_sized("host/a", sizes, kHostMaxBytes, false, host_a);
    register_sized("host/b", sizes, kHostMaxBytes, false, host_b);

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
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_kernels: %s\n", error.what());
        const auto* known = dynamic_cast<const gpurelay::Error*>(&error);
        return static_cast<int>(known != nullptr ? known->code() : gpurelay::ExitCode::runtime);
    }
}
