#include "app/resources.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "io/output_path.hpp"
#include "io/result_schema.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "pipeline/phase.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// What one rank will hold, worked out from the config before anything is allocated.
struct RankNeeds {
    double device = 0;   // the pipeline's plan (on the GPU path)
    double host = 0;     // pinned buffers, per-step records, and the plan itself on the CPU path
    double records = 0;  // of which per-step records (timings and counts of every pass)
};

RankNeeds rank_needs(const Config& config, const MemoryPlan& plan, Role role, bool cpu_path) {
    const double columns = static_cast<double>(config.recorded().columns);
    const double passes = config.overlap == OverlapMode::compare ? 2 : 1;
    const bool writes = role != Role::producer && config.written_rows() > 0;
    RankNeeds needs;
    // A pass's kept steps (times, counts, step numbers, and a row on its way to the file), each
    // pass's histograms (rank 0's also their sums) and the written steps: none grows with the
    // steps.
    const double histograms =
        3.0 * kPhaseCount * static_cast<double>(LogHistogram::bucket_count()) * 8;
    needs.records = columns * static_cast<double>(sizeof(StepTimes) + 4 * sizeof(Counter)) +
                    passes * histograms + static_cast<double>(config.written_rows()) * 8;
    needs.host = static_cast<double>(plan.host_bytes()) + needs.records +
                 (writes ? kWriterBuffers * static_cast<double>(config.tensor_bytes()) : 0);
    (cpu_path ? needs.host : needs.device) += static_cast<double>(plan.device_bytes());
    return needs;
}

// The memory this node offers (MemAvailable), in bytes; 0 when it cannot be read.
double available_host_memory() {
    std::FILE* meminfo = std::fopen("/proc/meminfo", "r");
    if (meminfo == nullptr) return 0;
    char line[256];
    double kib = 0;
    while (std::fgets(line, sizeof line, meminfo) != nullptr) {
        if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    }
    std::fclose(meminfo);
    return kib * 1024;
}

std::string mib(double bytes) {
    return format_bytes(static_cast<std::uint64_t>(std::min(bytes, 1.8e19)));
}

}  // namespace

// Each size's /y, /step, kept steps' times, step numbers and counts, histograms and metadata.
double output_file_bytes(const Config& config, int world_size, int pairs) {
    const double columns = static_cast<double>(config.recorded().columns);
    const double rows = static_cast<double>(config.written_rows());
    const double passes = config.overlap == OverlapMode::compare ? 2 : 1;
    const double element = config.dtype == DType::float32 ? 4 : 8;
    const double histograms =
        kPhaseCount *
        static_cast<double>(LogHistogram::bucket_count() + ResultSchema::kHistogramSums) * 8;
    double bytes = 0;
    for (const std::uint64_t elements : config.size_list()) {
        bytes +=
            pairs * rows * static_cast<double>(elements) * element + rows * 8 +
            passes * (columns * 8 * ((kPhaseCount + 1.0) * world_size + 2.0 * pairs) + histograms) +
            (1 << 20);
    }
    return bytes;
}

void check_resources(const Setup& setup, int rank) {
    // Every buffer is made for the largest size; the file holds every size's datasets.
    const Config config = setup.config.largest();
    const bool cpu_path = setup.device->backend() == Backend::host;
    const RankNeeds needs = rank_needs(config, setup.memory, setup.placement.role, cpu_path);
    // Ranks on one node share its memory.
    const Deadline bound("the sum of the host memory a node's ranks need");
    double mine[2] = {needs.host, needs.records}, node_needs[2] = {0, 0};
    int node_ranks = 1;
    {
        const NodeComm node(MPI_COMM_WORLD);
        MPI_CHECK(MPI_Allreduce(mine, node_needs, 2, MPI_DOUBLE, MPI_SUM, node.get()));
        node_ranks = node.size();
    }
    agree(MPI_COMM_WORLD, [&] {
        if (!cpu_path && needs.device > static_cast<double>(setup.device_info.free_memory)) {
            throw usage_error("rank " + std::to_string(rank) + " needs " + mib(needs.device) +
                              " of GPU memory for depth " + std::to_string(config.depth) + " x " +
                              mib(static_cast<double>(config.tensor_bytes())) + " slots, but " +
                              setup.device_info.name + " has " +
                              mib(static_cast<double>(setup.device_info.free_memory)) + " free");
        }
        const double available = available_host_memory();
        if (available > 0 && node_needs[0] > available) {
            throw usage_error("the " + std::to_string(node_ranks) + " ranks on this node need " +
                              mib(node_needs[0]) + " of host memory (" + mib(node_needs[1]) +
                              " of it the kept steps (step_record) and histograms), but it has " +
                              mib(available) + " available (MemAvailable)");
        }
        if (rank != 0) return;
        double file_bytes = setup.output_bytes;
        if (config.resume) {
            // A resumed file is already allocated, but for the rows not written yet.
            struct stat status {};
            if (::stat((config.output + ".partial").c_str(), &status) == 0) {
                file_bytes =
                    std::max(0.0, file_bytes - 512.0 * static_cast<double>(status.st_blocks));
            }
        }
        // A name of ours, under the lock; one left by a creation that was killed goes.
        const std::string probe = config.output + ".partial.tmp";
        std::error_code ignored;
        if (std::filesystem::is_regular_file(std::filesystem::symlink_status(probe, ignored))) {
            std::filesystem::remove(probe, ignored);
        }
        check_space_for("output", probe, static_cast<std::uint64_t>(std::min(file_bytes, 9.2e18)));
    });
}

}  // namespace gpurelay
