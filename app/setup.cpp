#include "app/setup.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "config/transport_choice.hpp"
#include "io/output_path.hpp"
#include "io/result_file.hpp"
#include "io/result_schema.hpp"
#include "kernels/formula.hpp"
#include "kernels/kernels.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/pipeline.hpp"
#include "report/write.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

std::unique_ptr<Device> open_device(const Config& config, int rank, int local_rank) {
    const int visible = cuda_device_count();
    const bool want_cuda = config.device == DeviceKind::cuda ||
                           (config.device == DeviceKind::auto_select && visible > 0);
    if (!want_cuda) {
        return make_host_device(config.timeout());
    }
    if (!cuda_built()) return make_cuda_device(0);  // throws the "built without CUDA" usage error
    if (visible == 0) {
        const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
        throw usage_error(
            "device = \"cuda\" but no GPU is visible to rank " + std::to_string(rank) +
            (mask ? std::string(" (CUDA_VISIBLE_DEVICES=") + mask + ")" : std::string()) +
            "; use device = \"cpu\" for the CPU path");
    }
    return make_cuda_device(select_gpu(local_rank, visible));
}

// Pairs, or the groups of a collective pattern (group_size 0: the whole world).
PairPlacement place_ranks(const Config& config, int rank, int size) {
    if (config.pattern == Pattern::pairs) {
        return place_pairs(rank, size, config.pairing == Pairing::split);
    }
    const int group_size =
        config.group_size == 0
            ? size
            : static_cast<int>(std::min<std::int64_t>(config.group_size, INT_MAX));
    if (config.pattern == Pattern::relay) return place_relay(rank, size, group_size);
    return place_groups(rank, size, group_size, collective_of(config.pattern), kMaxAllreduceGroup);
}

// A GPU that two of the ranks [begin, end) share (their keys are "host bus-id"), or "".
std::string shared_gpu(const std::vector<std::string>& gpu_keys, int begin, int end) {
    std::set<std::string> seen;
    for (int r = begin; r < end; ++r) {
        const std::string& key = gpu_keys[static_cast<std::size_t>(r)];
        if (!seen.insert(key).second) return key;
    }
    return "";
}

// Collective: what the transport's choice depends on, as the ranks found it. Ranks that share a
// GPU: any two for pairs, two of one group for a collective.
RunFacts gather_facts(const Setup& setup, int size) {
    const PairPlacement& p = setup.placement;
    RunFacts facts;
    facts.cuda_path = setup.device->backend() == Backend::cuda;
    facts.one_node = every_pair_on_one_node(MPI_COMM_WORLD, p.peer);
    facts.world_size = size;
    if (!*facts.cuda_path) return facts;
    if (setup.config.pattern == Pattern::pairs) {
        facts.shared_gpu = shared_gpu(setup.gpu_keys, 0, size);
        return facts;
    }
    facts.shared_gpu = "";
    for (int g = 0; g < p.groups && facts.shared_gpu->empty(); ++g) {
        facts.shared_gpu = shared_gpu(setup.gpu_keys, g * p.group_size, (g + 1) * p.group_size);
    }
    return facts;
}

// A collective pattern's transport: the collective over a communicator of this rank's group,
// behind the slot protocol. Collective over the world.
std::unique_ptr<Transport> open_collective(const Setup& setup, const TransportRow& row,
                                           const TransportOptions& options) {
    const Config& config = setup.config;
    const PairPlacement& p = setup.placement;
    const Collective op = collective_of(config.pattern);
    const ReduceType type =
        config.dtype == DType::float32 ? ReduceType::float32 : ReduceType::float64;
    // Before anything may throw: every rank takes part.
    MPI_Comm group = MPI_COMM_NULL;
    const Deadline bound("splitting the ranks into collective groups");
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, p.group, p.group_rank, &group));
    struct FreeGroup {
        MPI_Comm& comm;
        ~FreeGroup() { MPI_Comm_free(&comm); }
    } const free_group{group};  // the calls keep their own duplicate or NCCL communicator
    std::unique_ptr<CollectiveCall> call =
        row.make_collective(group, op, type, *setup.device, options);
    return make_collective_transport(std::move(call), p, *setup.device, options);
}

// A pair transport between world ranks `sender` and `receiver`, this rank's side the sender's
// (`outbound`) or the receiver's, over a communicator of just the two: made by
// MPI_Comm_create_group, collective over those two ranks only, so that what the transport sets
// up (NCCL's unique id and ncclCommInitRank, ipc's shared window, MPI's duplicate) involves two
// ranks, not the world, and costs the same at any size. (An NCCL communicator of the world split
// per pair, ncclCommSplit, would first make the world's, the N-rank init this avoids.)
std::unique_ptr<Transport> open_link(const TransportRow& row, int sender, int receiver,
                                     bool outbound, Device& device,
                                     const TransportOptions& options) {
    MPI_Comm link = open_link_comm(sender, receiver);
    struct FreeLink {
        MPI_Comm& comm;
        ~FreeLink() { MPI_Comm_free(&comm); }
    } const free_link{link};  // each transport keeps what it needs of the link
    return row.make_pair(link, relay_link(outbound), device, options);
}

// A relay stage's transport: a pair transport per link, made in link order (inbound first); a
// middle stage joins its two behind one protocol.
std::unique_ptr<Transport> open_relay(const Setup& setup, const TransportRow& row,
                                      const TransportOptions& options) {
    const PairPlacement& p = setup.placement;
    const int me = p.group * p.group_size + relay_stage(p);
    Device& device = *setup.device;
    if (p.role == Role::producer) return open_link(row, me, p.consumer, true, device, options);
    std::unique_ptr<Transport> inbound = open_link(row, p.producer, me, false, device, options);
    if (p.role == Role::consumer) return inbound;
    std::unique_ptr<Transport> outbound = open_link(row, me, p.consumer, true, device, options);
    return make_relay_transport(std::move(inbound), std::move(outbound), device, options.slots);
}

// Opens the transport of the row `choose_transport` chose: each pair and each hop of a relay over a
// communicator of its two ranks, each collective group over one of its own (collective over
// the world only in the groups' split).
std::unique_ptr<Transport> open_transport(const Setup& setup, const TransportRow& row) {
    // Slots for the largest of the run's sizes; each size moves through them in turn.
    const Config config = setup.config.largest();
    TransportOptions options{config.tensor_bytes(), config.chunk, config.timeout()};
    options.slots = static_cast<std::size_t>(config.depth);
    options.debug_skip_reuse_wait = config.debug_skip_reuse_wait;
    options.produce_in_place = config.ipc_engine == IpcEngine::sm;
    if (config.pattern == Pattern::relay) return open_relay(setup, row, options);
    if (config.pattern != Pattern::pairs) return open_collective(setup, row, options);
    const PairPlacement& p = setup.placement;
    // One rank in both roles is a pair of itself.
    if (p.role == Role::both) return row.make_pair(MPI_COMM_SELF, p, *setup.device, options);
    return open_link(row, p.producer, p.consumer, p.role == Role::producer, *setup.device, options);
}

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
    // Kept for the report and the file: a pass's kept steps at a time (times, counts and step
    // numbers, and one row in the file's order on its way there), each pass's histograms (rank 0
    // also the sums of every rank's), and the list of written steps. None grows with the steps
    // past step_record's columns.
    const double histograms =
        3.0 * kPhaseCount * static_cast<double>(LogHistogram::bucket_count()) * 8;
    needs.records = columns * static_cast<double>(sizeof(StepTimes) + 4 * sizeof(Counter)) +
                    passes * histograms + static_cast<double>(config.written_rows()) * 8;
    needs.host = static_cast<double>(plan.host_bytes()) + needs.records +
                 (writes ? kWriterBuffers * static_cast<double>(config.tensor_bytes()) : 0);
    (cpu_path ? needs.host : needs.device) += static_cast<double>(plan.device_bytes());
    return needs;
}

// The result file's size for one tensor size: /y, /step, the kept steps' times, step numbers and
// counts, the histograms, and room for metadata.
double result_file_bytes(const Config& config, int world_size, int pairs) {
    const double columns = static_cast<double>(config.recorded().columns);
    const double rows = static_cast<double>(config.written_rows());
    const double passes = config.overlap == OverlapMode::compare ? 2 : 1;
    const double element = config.dtype == DType::float32 ? 4 : 8;
    const double histograms =
        kPhaseCount *
        static_cast<double>(LogHistogram::bucket_count() + ResultSchema::kHistogramSums) * 8;
    return pairs * rows * static_cast<double>(config.elements) * element + rows * 8 +
           passes * (columns * 8 * ((kPhaseCount + 1.0) * world_size + 2.0 * pairs) + histograms) +
           (1 << 20);
}

// The whole result file: every size's datasets.
double output_file_bytes(const Config& config, int world_size, int pairs) {
    double bytes = 0;
    for (const std::uint64_t elements : config.size_list()) {
        bytes += result_file_bytes(config.sized(elements), world_size, pairs);
    }
    return bytes;
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

// Up front, before the pipeline allocates or the file is made: what every rank will hold on its
// device and its node's host memory, and what the file will take, against what there is.
// Collective; every rank leaves with the same usage error when anything does not fit.
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

// Every rank must end up on the same path.
void check_same_path(const Setup& setup, int size) {
    int cuda_ranks = setup.device->backend() == Backend::cuda ? 1 : 0;
    int cuda_total = 0;
    const Deadline bound("the count of the ranks that found a GPU");
    MPI_CHECK(MPI_Allreduce(&cuda_ranks, &cuda_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    agree(MPI_COMM_WORLD, [&] {
        if (cuda_total != 0 && cuda_total != size) {
            throw usage_error(std::to_string(cuda_total) + " of " + std::to_string(size) +
                              " ranks found a GPU: set device = \"cuda\" or \"cpu\" explicitly");
        }
    });
}

}  // namespace

// Every file the run writes, before any GPU or file work (rank 0): each path resolved (a link in
// the last place followed), the output checked by the result file's own rule, the side outputs by
// the same rule of what may be replaced, and no two of them one file. `resume`: the output is
// continued from PATH.partial instead of made afresh.
void check_output_paths(Config& config) {
    config.output = resolve_output_path("output", config.output);
    if (!config.resume) ResultFile::check_target(config.output, config.overwrite);
    struct Named {
        const char* key;
        std::string path;
    };
    std::vector<Named> files = {{"output", config.output}, {"output", config.output + ".partial"}};
    if (!config.summary_json.empty()) {
        config.summary_json = resolve_output_path("summary_json", config.summary_json);
        check_output_target("summary_json", config.summary_json, {".tmp"}, "");
        files.push_back({"summary_json", config.summary_json});
    }
    if (!config.results_csv.empty()) {
        config.results_csv = resolve_output_path("results_csv", config.results_csv);
        check_output_target("results_csv", config.results_csv, {}, "");
        check_results_csv_header(config.results_csv);
        files.push_back({"results_csv", config.results_csv});
    }
    for (std::size_t i = 2; i < files.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (same_file(files[i].path, files[j].path)) {
                throw usage_error(std::string(files[i].key) + " and " + files[j].key +
                                  " name the same file '" + files[i].path +
                                  "': each output needs its own");
            }
        }
    }
}

Setup set_up(const MpiSession& mpi, const Config& config) {
    const int rank = mpi.world_rank();
    const int size = mpi.world_size();
    Setup setup;
    setup.config = config;
    agree(MPI_COMM_WORLD, [&] { setup.placement = place_ranks(config, rank, size); });
    agree(MPI_COMM_WORLD, [&] {
        setup.device = open_device(config, rank, mpi.local_rank());
        setup.device_info = setup.device->info();
    });
    check_same_path(setup, size);
    const std::string gpu_key = setup.device_info.pci_bus_id.empty()
                                    ? mpi.host_name() + " cpu"
                                    : mpi.host_name() + " " + setup.device_info.pci_bus_id;
    setup.gpu_keys = allgather_strings(gpu_key, size);
    const RunFacts facts = gather_facts(setup, size);
    TransportChoice choice;
    agree(MPI_COMM_WORLD, [&] { choice = choose_transport(config, facts); });
    setup.transport_note = choice.reason;
    setup.spec = pipeline_spec(config.largest(), setup.placement);
    setup.memory = plan_memory(setup.spec, setup.placement.role, !choice.a_writes_in_place);
    setup.output_bytes = output_file_bytes(config, size, setup.placement.pairs);
    check_resources(setup, rank);
    agree(MPI_COMM_WORLD, [&] { setup.transport = open_transport(setup, *choice.row); });
    // Every wait on the GPU from here on is bounded by timeout_s and watches the transport.
    setup.device->set_wait_policy(
        {config.timeout(), [transport = setup.transport.get()] { transport->check_health(); }});
    return setup;
}

int working_threads() { return HostStream::live_count() + 1; }

void choose_host_wait(const Config& config, bool cuda_path) {
    cpu_set_t mine, node_cores;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);  // unknown: too few
    const int threads = working_threads();
    int node_threads = 0;
    const Deadline bound("counting each node's working threads and cores");
    {
        const NodeComm node(MPI_COMM_WORLD);
        MPI_CHECK(
            MPI_Allreduce(&mine, &node_cores, sizeof(cpu_set_t), MPI_BYTE, MPI_BOR, node.get()));
        MPI_CHECK(MPI_Allreduce(&threads, &node_threads, 1, MPI_INT, MPI_SUM, node.get()));
    }
    // Over the nodes: the most threads and the fewest cores.
    const int local[2] = {node_threads, -CPU_COUNT(&node_cores)};
    int busiest[2] = {0, 0};
    MPI_CHECK(MPI_Allreduce(local, busiest, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    const std::string load = std::to_string(busiest[0]) + " working thread(s) on a node, " +
                             std::to_string(-busiest[1]) + " core(s)";
    if (config.host_wait != HostWaitMode::auto_select) {
        set_host_wait(
            {config.host_wait == HostWaitMode::prompt ? HostWait::prompt : HostWait::sparing,
             "set by host_wait; " + load});
        return;
    }
    const HostWait wait = host_wait_for(cuda_path, busiest[0], -busiest[1]);
    set_host_wait({wait, std::string("auto: ") +
                             (cuda_path                  ? "GPU path, "
                              : wait == HostWait::prompt ? "a core for each thread, "
                                                         : "more threads than cores, ") +
                             load});
}

// Gathers one string per rank onto every rank.
std::vector<std::string> allgather_strings(const std::string& mine, int size) {
    constexpr int kWidth = 256;
    std::string record = mine.substr(0, kWidth - 1);
    record.resize(kWidth, '\0');
    std::vector<char> all(static_cast<std::size_t>(kWidth) * static_cast<std::size_t>(size));
    const Deadline bound("gathering the ranks' host and device names");
    MPI_CHECK(MPI_Allgather(record.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR,
                            MPI_COMM_WORLD));
    std::vector<std::string> out;
    for (int r = 0; r < size; ++r) out.emplace_back(all.data() + r * kWidth);
    return out;
}

// How this rank's device reaches its peer's, for the report (users check for NVLink here).
std::string peer_link(const Setup& setup, const std::vector<std::string>& hosts,
                      const std::string& my_host) {
    const PairPlacement& p = setup.placement;
    const bool relay = setup.config.pattern == Pattern::relay;
    if (setup.config.pattern != Pattern::pairs && !relay) {
        return "group " + std::to_string(p.group) + " of " + std::to_string(p.group_size) +
               " ranks (" + std::string(to_string(collective_of(setup.config.pattern))) +
               " from rank " + std::to_string(p.producer) + ")";
    }
    if (p.role == Role::both) return "itself (one rank plays both roles)";
    // A relay's stage: the link it sends on (the last stage's, the link it receives on).
    const auto peer =
        static_cast<std::size_t>(relay && p.role != Role::consumer ? p.consumer : p.peer);
    if (hosts[peer] != my_host) return "network (" + hosts[peer] + ")";
    if (setup.device->backend() == Backend::host) return "host memory (CPU path)";
    const std::vector<std::string>& gpu_keys = setup.gpu_keys;  // "host bus-id"
    const std::string peer_bus = gpu_keys[peer].substr(gpu_keys[peer].rfind(' ') + 1);
    return describe_peer_link(setup.device_info.pci_bus_id, peer_bus);
}

}  // namespace gpurelay
