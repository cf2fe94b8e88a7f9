#include "bench/bench_support.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "runtime/device.hpp"
#include "runtime/poll.hpp"
#include "transport/transport.hpp"

namespace gpurelay::bench {
namespace {

constexpr std::size_t kMinBytes = 4096;
constexpr std::size_t kDefaultMaxBytes = std::size_t{1} << 30;

std::atomic<bool> g_failed{false};
const char* g_program = "benchmark";

// Prints nothing: every rank but 0 of an MPI benchmark runs with it.
class NullReporter final : public benchmark::BenchmarkReporter {
  public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

// For errors where nothing can catch them (a proxy thread) and errors that reach main.
[[noreturn]] void abort_job(const Error& error) noexcept {
    claim_process_end();
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "%s: error on rank %d: %s\n", g_program, rank, error.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(error.code()));
    std::_Exit(static_cast<int>(error.code()));
}

bool initialize_on_ranks(const MpiSession& session, int argc, char** argv) {
    std::vector<char*> args;
    std::copy_if(argv, argv + argc, std::back_inserter(args), [&](const char* arg) {
        return session.world_rank() == 0 || std::string_view(arg).rfind("--benchmark_out", 0) != 0;
    });
    int arg_count = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&arg_count, args.data());
    return !benchmark::ReportUnrecognizedArguments(arg_count, args.data());
}

}  // namespace

std::size_t max_bytes_from_env() {
    const char* text = std::getenv("GPURELAY_BENCH_MAX_BYTES");
    if (text == nullptr || *text == '\0') return kDefaultMaxBytes;
    const std::string value(text);
    const auto bad = [&](const std::string& why) {
        return usage_error("GPURELAY_BENCH_MAX_BYTES=\"" + value + "\": " + why);
    };
    const std::size_t digits = std::min(value.find_first_not_of("0123456789"), value.size());
    if (digits == 0 || digits > 15) throw bad("expected a number of bytes, e.g. 65536 or 16M");
    const std::string suffix = value.substr(digits);
    static const std::map<std::string, int> shifts{{"", 0},     {"K", 10}, {"KiB", 10}, {"M", 20},
                                                   {"MiB", 20}, {"G", 30}, {"GiB", 30}};
    const auto shift = shifts.find(suffix);
    if (shift == shifts.end()) throw bad("unknown suffix '" + suffix + "' (use K, M or G)");
    std::size_t bytes = std::stoull(value.substr(0, digits));
    // Beyond 64 GiB no GPU here holds the buffers; also keeps the shift from overflowing.
    if (shift->second == 30 && bytes > 64) throw bad("more than 64 GiB");
    bytes <<= shift->second;
    if (bytes < kMinBytes || bytes % kMinBytes != 0) {
        throw bad("must be a multiple of 4096 and at least 4096");
    }
    return bytes;
}

benchmark::IterationCount iterations_for(std::size_t bytes) {
    return static_cast<benchmark::IterationCount>(
        std::clamp<std::size_t>((std::size_t{1} << 30) / bytes, 5, 200));
}

std::vector<std::size_t> bench_sizes(std::size_t max_bytes) {
    std::vector<std::size_t> sizes;
    for (std::size_t bytes = kMinBytes; bytes <= max_bytes; bytes *= 4) {
        sizes.push_back(bytes);
        if (bytes > std::numeric_limits<std::size_t>::max() / 4) break;
    }
    if (sizes.empty() || sizes.back() != max_bytes) sizes.push_back(max_bytes);
    return sizes;
}

void register_timed(const std::string& name, std::size_t bytes,
                    benchmark::IterationCount iterations,
                    std::function<void(benchmark::State&)> body) {
    benchmark::RegisterBenchmark(name.c_str(), std::move(body))
        ->Arg(static_cast<std::int64_t>(bytes))
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

std::int64_t per_run(const benchmark::State& state, std::size_t bytes) {
    return static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes);
}

void fail(benchmark::State& state, const std::string& message) {
    g_failed = true;
    state.SkipWithError(message.c_str());
}

bool any_failed() { return g_failed; }

const char* no_gpu() { return cuda_built() ? "no GPU found" : "built without CUDA"; }

WrongCount::WrongCount(Device& device)
    : device_(device),
      counter_(device.allocate(sizeof(Counter))),
      host_(device.allocate_host(sizeof(Counter))) {}

Counter* WrongCount::reset(Stream& stream) {
    device_.fill_async(counter_.data(), 0, sizeof(Counter), stream);
    return counter_.as<Counter>().data();
}

Counter WrongCount::read(Stream& stream) {
    device_.copy_async(host_.data(), counter_.data(), sizeof(Counter), stream);
    stream.synchronize();
    return *host_.as<Counter>().data();
}

Counter WrongCount::count_b(Span<const float> x, Span<float> scratch, std::uint64_t step,
                            std::uint32_t seed, Stream& stream, TensorForm expected) {
    launch_b(x, scratch, 1.0f, step, seed, reset(stream), stream, expected);
    return read(stream);
}

int mpi_benchmark_main(const char* program, int argc, char** argv,
                       int (*run)(MpiSession& session)) {
    g_program = program;
    set_host_wait({HostWait::prompt, "benchmarks wait as gpurelay does on the GPU path"});
    std::unique_ptr<MpiSession> session;
    try {
        session = std::make_unique<MpiSession>(&argc, &argv);
        set_fatal_handler(abort_job);
        if (!initialize_on_ranks(*session, argc, argv)) return static_cast<int>(ExitCode::usage);
        return run(*session);
    } catch (const Error& error) {
        abort_job(error);
    } catch (const std::exception& error) {
        abort_job(runtime_error(error.what()));
    }
}

void say(const MpiSession& session, const std::string& text) {
    if (session.world_rank() == 0) std::fprintf(stderr, "%s: %s\n", g_program, text.c_str());
}

bool gpu_on_every_rank() { return summed(cuda_device_count() > 0 ? 0 : 1) == 0; }

void barrier() {
    const Deadline bound("a barrier that keeps the ranks' benchmark phases in step");
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

std::uint64_t summed(std::uint64_t mine) {
    const Deadline bound("a sum over the ranks (wrong values, failed checks, ranks without a GPU)");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    return mine;
}

double slowest_since(std::chrono::steady_clock::time_point begin) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const Deadline bound("the slowest rank's time");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return seconds;
}

bool on_distinct_gpus(const MpiSession& session, Device& device) {
    constexpr std::size_t kWidth = 256;
    std::string mine = session.host_name() + "/" + device.info().pci_bus_id;
    mine.resize(kWidth, '\0');
    std::vector<char> all(kWidth * 2);
    MPI_CHECK(
        MPI_Allgather(mine.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD));
    return !std::equal(all.begin(), all.begin() + kWidth, all.begin() + kWidth);
}

int run_on_ranks(const MpiSession& session, const char* why, ExitCode code) {
    if (session.world_rank() == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        NullReporter quiet;
        benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    benchmark::Shutdown();
    if (summed(any_failed() ? 1 : 0) == 0) return 0;  // every rank ends with the same code
    if (why != nullptr) say(session, std::string(why) + " (see ERROR above)");
    return static_cast<int>(code);
}

void add_provenance_context() {
    benchmark::AddCustomContext("gpurelay_version", GPURELAY_BENCH_VERSION);
    benchmark::AddCustomContext("gpurelay_git", GPURELAY_BENCH_GIT_HASH);
    benchmark::AddCustomContext("cuda", cuda_version_string());
    benchmark::AddCustomContext("nccl", nccl_version_string());
}

}  // namespace gpurelay::bench
