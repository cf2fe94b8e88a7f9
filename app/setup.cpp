#include "app/setup.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "comm/agreement.hpp"
#include "comm/mpi_error.hpp"
#include "report/report.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

// Everything a file path in the config needs before any GPU or file work: its folder exists and
// is writable, and the HDF5 output is not overwritten by accident.
void check_output_paths(const Config& config) {
    namespace fs = std::filesystem;
    auto check_folder = [](const std::string& key, const std::string& path) {
        const fs::path folder =
            fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
        if (!fs::is_directory(folder)) {
            throw usage_error(key + ": folder '" + folder.string() + "' does not exist");
        }
        if (::access(folder.c_str(), W_OK) != 0) {
            throw usage_error(key + ": folder '" + folder.string() + "' is not writable");
        }
    };
    check_folder("output", config.output);
    if (fs::exists(config.output) && !config.overwrite) {
        throw usage_error("output file '" + config.output +
                          "' exists (use --overwrite to replace it)");
    }
    if (!config.summary_json.empty()) check_folder("summary_json", config.summary_json);
    if (!config.results_csv.empty()) {
        check_folder("results_csv", config.results_csv);
        check_results_csv_header(config.results_csv);
    }
}

std::unique_ptr<Device> open_device(const Config& config, int local_rank) {
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
            "device = \"cuda\" but no GPU is visible to rank " + std::to_string(world_rank()) +
            (mask ? std::string(" (CUDA_VISIBLE_DEVICES=") + mask + ")" : std::string()) +
            "; use device = \"cpu\" for the CPU path");
    }
    return make_cuda_device(select_gpu(local_rank, visible));
}

// Picks the transport, refusing up front what would fail later (NCCL with two ranks on one GPU,
// ipc across nodes). auto: NCCL when each rank has its own GPU; ipc when ranks share a GPU, or
// on the CPU path, as long as each pair is on one node; MPI otherwise.
std::unique_ptr<Transport> open_transport(Setup& setup, int world_size,
                                          const std::vector<std::string>& gpu_keys) {
    const Config& config = setup.config;
    const std::size_t bytes = config.tensor_bytes();
    TransportOptions options{bytes, config.chunk, config.timeout()};
    options.slots = static_cast<std::size_t>(config.depth);
    options.debug_skip_reuse_wait = config.debug_skip_reuse_wait;
    std::vector<std::string> hosts;  // gpu_keys hold "host bus-id"
    for (const std::string& key : gpu_keys) hosts.push_back(key.substr(0, key.rfind(' ')));
    const bool one_node = pairs_on_one_node(hosts, config.pairing == Pairing::split);
    const auto ipc = [&] {
        return make_ipc_transport(MPI_COMM_WORLD, setup.placement, *setup.device, options);
    };
    if (config.transport == TransportKind::ipc && config.staging == Staging::on) {
        throw usage_error(
            "staging = \"on\" is for transport = \"mpi\"; ipc copies straight "
            "into the consumer's slots");
    }
    if (config.transport == TransportKind::ipc && !one_node) {
        throw usage_error(
            "transport = \"ipc\" needs each producer and its consumer on one node, but a pair "
            "spans two nodes; use transport = \"mpi\" or \"auto\"");
    }
    if (setup.device->backend() == Backend::host) {
        if (config.graphs) {
            throw usage_error(
                "graphs = true needs the CUDA path, but this run is on the CPU (no GPU visible): "
                "host streams cannot be captured in a CUDA graph");
        }
        if (config.transport == TransportKind::nccl) {
            throw usage_error(
                "transport = \"nccl\" needs the CUDA path, but this run is on the CPU");
        }
        if (config.staging == Staging::on) {
            return make_mpi_staged_transport(MPI_COMM_WORLD, *setup.device, options);
        }
        if (config.transport == TransportKind::ipc ||
            (config.transport == TransportKind::auto_select && one_node)) {
            return ipc();
        }
        return make_mpi_host_transport(MPI_COMM_WORLD, options);
    }
    if (config.transport == TransportKind::ipc) return ipc();
    if (world_size == 1) {
        if (config.transport == TransportKind::mpi) {
            throw usage_error(
                "transport = \"mpi\" needs two ranks on the CUDA path; one rank sends "
                "to itself with transport = \"nccl\" or \"ipc\"");
        }
        return make_nccl_transport(MPI_COMM_WORLD);
    }
    std::set<std::string> seen;
    std::string shared;
    for (const std::string& key : gpu_keys) {
        if (!seen.insert(key).second) shared = key;
    }
    if (!shared.empty()) {
        if (config.transport == TransportKind::nccl) {
            throw usage_error("transport = \"nccl\" cannot run two ranks on one GPU (" + shared +
                              "); give each rank its own GPU or use transport = \"ipc\"");
        }
        if (config.graphs) {
            throw usage_error("graphs = true needs NCCL, but ranks share a GPU (" + shared +
                              "), where NCCL cannot run and the ipc and MPI transports' waits "
                              "cannot be captured; give each rank its own GPU");
        }
        if (config.transport == TransportKind::auto_select && one_node) {
            setup.transport_note = "ranks share a GPU, which NCCL refuses: auto chose ipc";
            return ipc();
        }
        if (config.transport == TransportKind::auto_select) {
            setup.transport_note = "ranks share a GPU and pairs span nodes: auto chose MPI";
        }
        return make_mpi_staged_transport(MPI_COMM_WORLD, *setup.device, options);
    }
    if (config.transport == TransportKind::mpi) {
        return make_mpi_staged_transport(MPI_COMM_WORLD, *setup.device, options);
    }
    return make_nccl_transport(MPI_COMM_WORLD);
}

std::uint64_t pipeline_bytes_needed(const Config& config, Role role) {
    const std::uint64_t slots = static_cast<std::uint64_t>(config.depth) * config.tensor_bytes();
    const std::uint64_t producer = slots;
    const std::uint64_t consumer = 2 * slots + config.c_elements * 4;
    return role == Role::producer   ? producer
           : role == Role::consumer ? consumer
                                    : producer + consumer;
}

// Every rank must end up on the same path, with the memory its role needs.
void check_device_and_memory(const Setup& setup, int rank, int size) {
    const Config& config = setup.config;
    int cuda_ranks = setup.device->backend() == Backend::cuda ? 1 : 0;
    int cuda_total = 0;
    MPI_CHECK(MPI_Allreduce(&cuda_ranks, &cuda_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    agree(MPI_COMM_WORLD, [&] {
        if (cuda_total != 0 && cuda_total != size) {
            throw usage_error(std::to_string(cuda_total) + " of " + std::to_string(size) +
                              " ranks found a GPU: set device = \"cuda\" or \"cpu\" explicitly");
        }
        const std::uint64_t needed = pipeline_bytes_needed(config, setup.placement.role);
        if (setup.device->backend() == Backend::cuda && needed > setup.device_info.free_memory) {
            throw usage_error("rank " + std::to_string(rank) + " needs " +
                              std::to_string(needed >> 20) + " MiB of GPU memory for depth " +
                              std::to_string(config.depth) + " x " +
                              std::to_string(config.tensor_bytes() >> 20) + " MiB slots, but " +
                              setup.device_info.name + " has " +
                              std::to_string(setup.device_info.free_memory >> 20) + " MiB free");
        }
    });
}

}  // namespace

Setup set_up(const MpiSession& mpi, const Config& config) {
    const int rank = mpi.world_rank();
    const int size = mpi.world_size();
    Setup setup;
    setup.config = config;
    agree(MPI_COMM_WORLD, [&] {
        setup.placement = place_pairs(rank, size, config.pairing == Pairing::split);
        if (rank == 0) check_output_paths(config);
    });
    agree(MPI_COMM_WORLD, [&] {
        setup.device = open_device(config, mpi.local_rank());
        setup.device_info = setup.device->info();
    });
    check_device_and_memory(setup, rank, size);
    const std::string gpu_key = setup.device_info.pci_bus_id.empty()
                                    ? mpi.host_name() + " cpu"
                                    : mpi.host_name() + " " + setup.device_info.pci_bus_id;
    setup.gpu_keys = allgather_strings(gpu_key, size);
    agree(MPI_COMM_WORLD, [&] { setup.transport = open_transport(setup, size, setup.gpu_keys); });
    // Every wait on the GPU from here on is bounded by timeout_s and watches the transport.
    setup.device->set_wait_policy(
        {config.timeout(), [transport = setup.transport.get()] { transport->check_health(); }});
    return setup;
}

// Gathers one string per rank onto every rank.
std::vector<std::string> allgather_strings(const std::string& mine, int size) {
    constexpr int kWidth = 256;
    std::string record = mine.substr(0, kWidth - 1);
    record.resize(kWidth, '\0');
    std::vector<char> all(static_cast<std::size_t>(kWidth) * static_cast<std::size_t>(size));
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
    if (p.role == Role::both) return "itself (one rank plays both roles)";
    const auto peer = static_cast<std::size_t>(p.peer);
    if (hosts[peer] != my_host) return "network (" + hosts[peer] + ")";
    if (setup.device->backend() == Backend::host) return "host memory (CPU path)";
    const std::vector<std::string>& gpu_keys = setup.gpu_keys;  // "host bus-id"
    const std::string peer_bus = gpu_keys[peer].substr(gpu_keys[peer].rfind(' ') + 1);
    return describe_peer_link(setup.device_info.pci_bus_id, peer_bus);
}

}  // namespace gpurelay
