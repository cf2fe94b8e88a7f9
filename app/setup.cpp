// Set-up agreed by every rank: placement, the device, the path, the transport (after the resource
// check, app/resources.cpp) and, once the pipeline's host streams exist, how the hosts wait.
#include "app/setup.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include "app/resources.hpp"
#include "config/transport_choice.hpp"
#include "kernels/formula.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

std::unique_ptr<Device> open_device(const Config& config, int rank, int local_rank) {
    const int visible = cuda_device_count();
    const bool want_cuda = config.device == DeviceKind::cuda ||
                           (config.device == DeviceKind::auto_select && visible > 0);
    if (!want_cuda) return make_host_device(config.timeout());
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
    const bool pairs = setup.config.pattern == Pattern::pairs;
    const int groups = pairs ? 1 : p.groups, span = pairs ? size : p.group_size;
    facts.shared_gpu = "";
    for (int g = 0; g < groups && facts.shared_gpu->empty(); ++g) {
        facts.shared_gpu = shared_gpu(setup.gpu_keys, g * span, (g + 1) * span);
    }
    return facts;
}

struct FreeComm {
    MPI_Comm& comm;
    ~FreeComm() { MPI_Comm_free(&comm); }
};

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
    const FreeComm free_group{group};  // the calls keep their own duplicate or NCCL communicator
    std::unique_ptr<CollectiveCall> call =
        row.make_collective(group, op, type, *setup.device, options);
    return make_collective_transport(std::move(call), p, *setup.device, options);
}

// A pair transport between world ranks `sender` and `receiver` (this rank the sender when
// `outbound`), over a communicator of just the two: its set-up costs the same at any world size.
std::unique_ptr<Transport> open_link(const TransportRow& row, int sender, int receiver,
                                     bool outbound, Device& device,
                                     const TransportOptions& options) {
    MPI_Comm link = open_link_comm(sender, receiver);
    const FreeComm free_link{link};  // each transport keeps what it needs of the link
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

// The chosen row's transport: each pair and relay hop over a communicator of its two ranks,
// each collective group over its own (collective over the world only in the split).
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
    const std::string& bus_id = setup.device_info.pci_bus_id;
    setup.gpu_keys =
        allgather_strings(mpi.host_name() + " " + (bus_id.empty() ? "cpu" : bus_id), size);
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

void choose_host_wait(const Config& config, bool cuda_path) {
    cpu_set_t mine, node_cores;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);  // unknown: too few
    const int threads = HostStream::live_count() + 1;  // the main thread and each host stream
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
    const bool chosen = config.host_wait != HostWaitMode::auto_select;
    const HostWait wait = !chosen ? host_wait_for(cuda_path, busiest[0], -busiest[1])
                          : config.host_wait == HostWaitMode::prompt ? HostWait::prompt
                                                                     : HostWait::sparing;
    set_host_wait({wait, (chosen                     ? "set by host_wait; "
                          : cuda_path                ? "auto: GPU path, "
                          : wait == HostWait::prompt ? "auto: a core for each thread, "
                                                     : "auto: more threads than cores, ") +
                             load});
}

}  // namespace gpurelay
