#include "bench/bench_support.hpp"

#include <atomic>
#include <cstdlib>
#include <limits>

#include "comm/transport.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"

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

void add_provenance_context() {
    benchmark::AddCustomContext("gpurelay_version", GPURELAY_BENCH_VERSION);
    benchmark::AddCustomContext("gpurelay_git", GPURELAY_BENCH_GIT_HASH);
    benchmark::AddCustomContext("cuda", cuda_version_string());
    benchmark::AddCustomContext("nccl", nccl_version_string());
}

}  // namespace gpurelay::bench
