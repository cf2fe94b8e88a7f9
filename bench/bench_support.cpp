#include "bench/bench_support.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <string_view>

#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/poll.hpp"
#include "transport/transport.hpp"

namespace gpurelay::bench {
namespace {

std::atomic<bool> g_failed{false};

}  // namespace

std::size_t max_bytes_from_env() {
    const char* text = std::getenv("GPURELAY_BENCH_MAX_BYTES");
    if (text == nullptr || *text == '\0') return kDefaultMaxBytes;
    const std::string value(text);
    const auto bad = [&](const std::string& why) {
        return usage_error("GPURELAY_BENCH_MAX_BYTES=\"" + value + "\": " + why);
    };
    std::size_t digits = 0;
    while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
    if (digits == 0 || digits > 15) throw bad("expected a number of bytes, e.g. 65536 or 16M");
    std::size_t bytes = std::stoull(value.substr(0, digits));
    const std::string suffix = value.substr(digits);
    if (suffix == "K" || suffix == "KiB") {
        bytes <<= 10;
    } else if (suffix == "M" || suffix == "MiB") {
        bytes <<= 20;
    } else if (suffix == "G" || suffix == "GiB") {
        // Beyond 64 GiB no GPU here holds the buffers; also keeps the shift from overflowing.
        if (bytes > 64) throw bad("more than 64 GiB");
        bytes <<= 30;
    } else if (!suffix.empty()) {
        throw bad("unknown suffix '" + suffix + "' (use K, M or G)");
    }
    if (bytes < kMinBytes || bytes % kMinBytes != 0) {
        throw bad("must be a multiple of 4096 and at least 4096");
    }
    return bytes;
}

benchmark::IterationCount iterations_for(std::size_t bytes) {
    const std::size_t budget = std::size_t{1} << 30;
    return static_cast<benchmark::IterationCount>(std::clamp<std::size_t>(budget / bytes, 5, 200));
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

std::string size_label(std::size_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + " " + units[unit];
}

void fail(benchmark::State& state, const std::string& message) {
    g_failed = true;
    state.SkipWithError(message.c_str());
}

bool any_failed() { return g_failed; }

bool initialize_on_ranks(const MpiSession& session, int argc, char** argv) {
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        if (session.world_rank() != 0 &&
            std::string_view(argv[i]).rfind("--benchmark_out", 0) == 0) {
            continue;
        }
        args.push_back(argv[i]);
    }
    int arg_count = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&arg_count, args.data());
    return !benchmark::ReportUnrecognizedArguments(arg_count, args.data());
}

void run_on_ranks(const MpiSession& session) {
    if (session.world_rank() == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        NullReporter quiet;
        benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    benchmark::Shutdown();
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

void abort_job(const char* program, const Error& error) noexcept {
    claim_process_end();
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "%s: error on rank %d: %s\n", program, rank, error.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(error.code()));
    std::_Exit(static_cast<int>(error.code()));
}

namespace {
const char* g_program = "benchmark";
[[noreturn]] void abort_program_job(const Error& error) noexcept { abort_job(g_program, error); }
}  // namespace

int mpi_benchmark_main(const char* program, int argc, char** argv,
                       int (*run)(MpiSession& session, int argc, char** argv)) {
    g_program = program;
    set_host_wait({HostWait::prompt, "benchmarks wait as gpurelay does on the GPU path"});
    std::unique_ptr<MpiSession> session;
    try {
        session = std::make_unique<MpiSession>(&argc, &argv);
        set_fatal_handler(abort_program_job);
        return run(*session, argc, argv);
    } catch (const Error& error) {
        abort_program_job(error);
    } catch (const std::exception& error) {
        abort_program_job(runtime_error(error.what()));
    }
}

void add_provenance_context() {
    benchmark::AddCustomContext("gpurelay_version", GPURELAY_BENCH_VERSION);
    benchmark::AddCustomContext("gpurelay_git", GPURELAY_BENCH_GIT_HASH);
    benchmark::AddCustomContext("cuda", cuda_version_string());
    benchmark::AddCustomContext("nccl", nccl_version_string());
}

}  // namespace gpurelay::bench
