// The one place that says which transport runs: the request's candidates, most preferred first,
// each held against the table's needs (kTransports) and what the ranks found.
#include "config/transport_choice.hpp"

#include <vector>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using Candidates = std::vector<TransportUsed>;

// Whether the run moves tensors over pair links (pairs, and a relay's links between stages)
// rather than through a collective.
bool pair_links(const Config& c) {
    return c.pattern == Pattern::pairs || c.pattern == Pattern::relay;
}

// The transports a request may use, most preferred first. auto: NCCL when each rank has its own
// GPU; ipc when ranks share one, and on the CPU path, as long as each pair is on one node; MPI
// otherwise (host-staged on the GPU, or with staging = "on").
Candidates candidates(const Config& c, bool cuda) {
    const bool pairs = pair_links(c);
    const bool staged = cuda || c.staging == Staging::on;
    switch (c.transport) {
        case TransportKind::nccl:
            return {TransportUsed::nccl};
        case TransportKind::ipc:
            return {TransportUsed::ipc};
        case TransportKind::mpi:
            return {staged ? TransportUsed::mpi_staged : TransportUsed::mpi_host};
        default:
            break;
    }
    if (!cuda && c.staging == Staging::on) return {TransportUsed::mpi_staged};
    if (!cuda)
        return pairs ? Candidates{TransportUsed::ipc, TransportUsed::mpi_host}
                     : Candidates{TransportUsed::mpi_host};
    return pairs ? Candidates{TransportUsed::nccl, TransportUsed::ipc, TransportUsed::mpi_staged}
                 : Candidates{TransportUsed::nccl, TransportUsed::mpi_staged};
}

// Why `t` cannot serve this run: the message for a request that named it, and the short form
// auto's reason uses ("" when it can, or when the facts do not tell yet).
struct Refusal {
    std::string message, brief;
};

Refusal refusal(const TransportTraits& t, const Config& c, const RunFacts& f) {
    const std::string named = "transport = \"" + std::string(t.name) + "\"";
    if (f.cuda_path && !(*f.cuda_path ? t.cuda_path : t.cpu_path)) {
        return {named + " needs the CUDA path, but this run is on the CPU", ""};
    }
    if (c.graphs && !t.graphs) {
        return {"graphs = true needs transport = \"nccl\": " + std::string(t.no_graphs), ""};
    }
    if (c.launch == Launch::device && !t.device_launch) {
        return {"launch = \"device\" needs transport = \"ipc\" with ipc_engine = \"sm\": " +
                    std::string(t.no_device_launch),
                ""};
    }
    if (!pair_links(c) && !t.collectives) {
        return {"pattern = \"" + std::string(to_string(c.pattern)) +
                    "\" needs transport = \"nccl\", \"mpi\" or \"auto\": " +
                    std::string(t.no_collectives),
                ""};
    }
    if (f.one_node == false && !t.across_nodes) {
        return {named +
                    " needs each producer and its consumer on one node, but a pair spans two "
                    "nodes; use transport = \"mpi\" or \"auto\"",
                "a pair spans two nodes, which " + std::string(t.name) + " refuses"};
    }
    if (f.shared_gpu && !f.shared_gpu->empty() && !t.shared_gpu) {
        const bool pairs = c.pattern == Pattern::pairs;
        return {
            named + " cannot run two ranks " + (pairs ? "" : "of a group ") + "on one GPU (" +
                *f.shared_gpu + "); give each rank its own GPU or use transport = \"" +
                (pair_links(c) ? "ipc" : "mpi") + "\"",
            std::string(pairs ? "ranks" : "ranks of a group") + " share a GPU, which NCCL refuses"};
    }
    if (f.world_size == 1 && f.cuda_path == true && !t.to_itself_on_gpu) {
        return {named +
                    " needs two ranks on the CUDA path; one rank sends to itself with transport = "
                    "\"nccl\" or \"ipc\"",
                ""};
    }
    return {};
}

// What the deck asks for that no facts can change.
void check_request(const Config& c, const RunFacts& f) {
    // (Another transport named is refused by the table, with its own reason.)
    const bool ipc_or_auto =
        c.transport == TransportKind::ipc || c.transport == TransportKind::auto_select;
    if (c.launch == Launch::device && ipc_or_auto && c.ipc_engine != IpcEngine::sm) {
        throw usage_error(
            "launch = \"device\" needs transport = \"ipc\" with ipc_engine = \"sm\": the "
            "producer's kernel writes the consumer's slot itself and a word says it has arrived");
    }
    if (c.ipc_engine == IpcEngine::sm && c.transport != TransportKind::ipc) {
        throw usage_error("ipc_engine = \"sm\" needs transport = \"ipc\" (got \"" +
                          std::string(to_string(c.transport)) +
                          "\"): A writes into the consumer's slot only through the ipc "
                          "transport's mapping");
    }
    if (c.transport == TransportKind::ipc && c.staging == Staging::on) {
        throw usage_error(
            "staging = \"on\" is for transport = \"mpi\"; ipc copies straight into the consumer's "
            "slots");
    }
    if (c.launch == Launch::device && f.world_size && *f.world_size > 2) {
        throw usage_error("launch = \"device\" drives one pair (-np 1 or 2), but this run has " +
                          std::to_string(*f.world_size) +
                          " ranks: its producer alone decides where a stopped pass ends");
    }
    if (c.graphs && f.cuda_path == false) {
        throw usage_error(std::string("graphs = true needs the CUDA path, but ") +
                          (c.device == DeviceKind::cpu
                               ? "device = \"cpu\""
                               : "this run is on the CPU (no GPU visible)") +
                          ": host streams cannot be captured in a CUDA graph");
    }
}

}  // namespace

const TransportTraits& traits_of(TransportUsed used) {
    return kTransports[static_cast<std::size_t>(used)];
}

RunFacts facts_from_config(const Config& config) {
    RunFacts facts;
    if (config.device != DeviceKind::auto_select)
        facts.cuda_path = config.device == DeviceKind::cuda;
    return facts;
}

TransportChoice choose_transport(const Config& config, const RunFacts& facts) {
    check_request(config, facts);
    if (!facts.cuda_path && config.transport == TransportKind::auto_select) return {};
    // With the path unknown, an explicit request is held against the needs that do not depend
    // on it (MPI's host-staged form refuses what its host form does, and more).
    const Candidates options = candidates(config, facts.cuda_path.value_or(true));
    std::vector<Refusal> refused;
    for (const TransportUsed used : options) {
        Refusal why = refusal(traits_of(used), config, facts);
        if (why.message.empty()) {
            TransportChoice choice{
                facts.cuda_path ? std::optional(used) : std::nullopt, "",
                used == TransportUsed::ipc && config.ipc_engine == IpcEngine::sm};
            if (!refused.empty() && !refused.front().brief.empty()) {
                choice.reason =
                    refused.front().brief + ": auto chose " + std::string(traits_of(used).name);
            }
            return choice;
        }
        refused.push_back(std::move(why));
    }
    std::string message = refused.front().message;
    if (config.transport == TransportKind::auto_select) {
        message = "no transport suits this run: " + message;
        for (std::size_t i = 1; i < refused.size(); ++i) message += "; " + refused[i].message;
    }
    throw usage_error(message);
}

}  // namespace gpurelay
