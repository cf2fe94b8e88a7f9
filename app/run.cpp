#include "app/run.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <variant>

#include "app/version.hpp"
#include "comm/agreement.hpp"
#include "comm/mpi_error.hpp"
#include "comm/mpi_session.hpp"
#include "comm/pairing.hpp"
#include "comm/stop_request.hpp"
#include "comm/transport.hpp"
#include "config/command_line.hpp"
#include "config/config.hpp"
#include "io/result_file.hpp"
#include "io/result_schema.hpp"
#include "io/result_writer.hpp"
#include "kernels/kernels.hpp"
#include "pipeline/pipeline.hpp"
#include "report/report.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {
namespace {

constexpr int kWriterBuffers = 3;
constexpr std::uint64_t kRowSpotSamples = 1024;

int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

// The step this rank's host is working on (queueing, or waiting for) and the pass it is in, for
// the fatal handler's message (-1 outside the passes).
std::atomic<std::int64_t> step_in_progress{-1};
std::atomic<int> current_pass_overlap{-1};

// The fatal handler: one line naming the rank and the step, then every rank of the job ends.
void abort_job(const Error& error) noexcept {
    const std::int64_t step = step_in_progress.load();
    const int overlap = current_pass_overlap.load();
    char where[96] = "";
    if (step >= 0) {
        std::snprintf(where, sizeof where, " at step %lld (overlap %s pass)",
                      static_cast<long long>(step), overlap == 1 ? "on" : "off");
    }
    std::fprintf(stderr, "gpurelay: error on rank %d%s: %s\n", world_rank(), where, error.what());
    std::fflush(stderr);
    // MPI_Abort may run exit handlers, and the CUDA runtime's can wait for a kernel that never
    // ends; this rank ends regardless after a grace period.
    const int code = static_cast<int>(error.code());
    std::thread([code] {
        std::this_thread::sleep_for(std::chrono::seconds(10));
        std::_Exit(code);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(error.code()));
    std::_Exit(static_cast<int>(error.code()));
}

std::string version_text() {
    return std::string("gpurelay ") + kVersion + " (git " + kGitHash + ")\nCUDA " +
           cuda_version_string() + "\nNCCL " + nccl_version_string() + "\nMPI " +
           mpi_version_string() + "\nHDF5 " + hdf5_version() + "\n";
}

std::string versions_line() {
    return std::string("gpurelay ") + kVersion + " (git " + kGitHash + "), CUDA " +
           cuda_version_string() + ", NCCL " + nccl_version_string() + ", " + mpi_version_string() +
           ", HDF5 " + hdf5_version();
}

std::string utc_timestamp() {
    const std::time_t now = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return text;
}

// Broadcasts a string from rank 0.
void broadcast(std::string& text) {
    int length = static_cast<int>(text.size());
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD));
    text.resize(static_cast<std::size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD));
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

// What a resumed run reads from the .partial file: where it stopped.
struct ResumePoint {
    std::int64_t pass = 0;
    std::int64_t step = 0;
};

// A run may only continue a file whose results it would reproduce: the keys that shape /y and
// the verification must match the deck stored in the file.
ResumePoint find_resume_point(const Config& config) {
    const std::string partial = config.output + ".partial";
    const auto stored = ResultFile::read_root_attribute(partial, "config_toml");
    if (!stored || !std::holds_alternative<std::string>(*stored)) {
        throw usage_error("resume: nothing to resume: '" + partial + "' does not exist");
    }
    const Config before = config_from_toml(std::get<std::string>(*stored), partial);
    for (const char* key : {"elements", "dtype", "steps", "warmup", "overlap", "c_elements",
                            "c_iterations", "alpha", "seed", "pairing", "write"}) {
        if (config_value_toml(before, key) != config_value_toml(config, key)) {
            throw usage_error("resume: " + std::string(key) + " is " +
                              config_value_toml(config, key) + " but '" + partial +
                              "' was started with " + config_value_toml(before, key));
        }
    }
    const auto step = ResultFile::read_root_attribute(partial, "stopped_at_step");
    const auto pass = ResultFile::read_root_attribute(partial, "stopped_pass");
    if (!step || !pass || !std::holds_alternative<std::int64_t>(*step) ||
        !std::holds_alternative<std::int64_t>(*pass)) {
        throw usage_error("resume: '" + partial +
                          "' was not stopped by a signal (no stopped_at_step): start afresh");
    }
    return {std::get<std::int64_t>(*pass), std::get<std::int64_t>(*step)};
}

struct Setup {
    Config config;
    PairPlacement placement;
    std::unique_ptr<Device> device;
    DeviceInfo device_info;
    std::unique_ptr<Transport> transport;
    std::string transport_note;
};

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
        throw usage_error("staging = \"on\" is for transport = \"mpi\"; ipc copies straight "
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

Attributes root_attributes(const Setup& setup, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& gpus) {
    Attributes attrs;
    const Config& config = setup.config;
    for (const auto& key : config_keys()) {
        const std::string text = config_value_toml(config, key.name);
        if (text.size() >= 2 && text.front() == '"') {
            attrs.emplace_back(std::string(key.name), text.substr(1, text.size() - 2));
            continue;
        }
        char* end = nullptr;
        const long long integer = std::strtoll(text.c_str(), &end, 10);
        if (end != nullptr && *end == '\0' && !text.empty()) {
            attrs.emplace_back(std::string(key.name), static_cast<std::int64_t>(integer));
            continue;
        }
        const double real = std::strtod(text.c_str(), &end);
        if (end != nullptr && *end == '\0' && !text.empty()) {
            attrs.emplace_back(std::string(key.name), real);
        } else {
            attrs.emplace_back(std::string(key.name), text);
        }
    }
    attrs.emplace_back("config_toml", config_to_toml(config));
    attrs.emplace_back("gpurelay_version", std::string(kVersion));
    attrs.emplace_back("git_hash", std::string(kGitHash));
    attrs.emplace_back("cuda_version", cuda_version_string());
    attrs.emplace_back("nccl_version", nccl_version_string());
    attrs.emplace_back("mpi_version", mpi_version_string());
    attrs.emplace_back("hdf5_version", hdf5_version());
    attrs.emplace_back("backend",
                       std::string(setup.device->backend() == Backend::cuda ? "cuda" : "cpu"));
    attrs.emplace_back("transport_used", setup.transport->name());
    attrs.emplace_back("world_size", static_cast<std::int64_t>(hosts.size()));
    attrs.emplace_back("pair_count", static_cast<std::int64_t>(setup.placement.pairs));
    std::string host_list, gpu_list;
    for (std::size_t r = 0; r < hosts.size(); ++r) {
        host_list += (r ? "," : "") + hosts[r];
        gpu_list += (r ? "," : "") + gpus[r];
    }
    attrs.emplace_back("rank_hosts", host_list);
    attrs.emplace_back("rank_devices", gpu_list);
    attrs.emplace_back("started_utc", utc_timestamp());
    return attrs;
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
                      const std::vector<std::string>& gpu_keys, const std::string& my_host) {
    const PairPlacement& p = setup.placement;
    if (p.role == Role::both) return "itself (one rank plays both roles)";
    const auto peer = static_cast<std::size_t>(p.peer);
    if (hosts[peer] != my_host) return "network (" + hosts[peer] + ")";
    if (setup.device->backend() == Backend::host) return "host memory (CPU path)";
    // gpu_keys hold "host bus-id".
    const std::string peer_bus = gpu_keys[peer].substr(gpu_keys[peer].rfind(' ') + 1);
    return describe_peer_link(setup.device_info.pci_bus_id, peer_bus);
}

// Progress on rank 0: a refreshed line on a terminal, a line every 10 s in a batch log.
class Progress {
  public:
    Progress(bool enabled, std::int64_t total)
        : enabled_(enabled),
          tty_(::isatty(STDOUT_FILENO) != 0),
          total_(total),
          start_(std::chrono::steady_clock::now()),
          last_(start_) {}
    void step_done() {
        ++done_;
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        const double since_last = std::chrono::duration<double>(now - last_).count();
        if (since_last < (tty_ ? 0.5 : 10.0) && done_ != total_) return;
        last_ = now;
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        const double rate = static_cast<double>(done_) / std::max(elapsed, 1e-9);
        const double left = static_cast<double>(total_ - done_) / std::max(rate, 1e-9);
        std::printf("%sprogress: step %lld/%lld, %.1f steps/s, %.0f s left%s", tty_ ? "\r" : "",
                    static_cast<long long>(done_), static_cast<long long>(total_), rate, left,
                    tty_ ? (done_ == total_ ? "\n" : "") : "\n");
        std::fflush(stdout);
    }

  private:
    bool enabled_, tty_;
    std::int64_t total_, done_ = 0;
    std::chrono::steady_clock::time_point start_, last_;
};

int run(MpiSession& mpi, int argc, char** argv) {
    const int rank = mpi.world_rank();
    const int size = mpi.world_size();
    Setup setup;
    // Named like the streams ("rank 1 consumer: comm stream"), so the timeline rows line up.
    nvtx::name_current_thread(("rank " + std::to_string(rank) + " main").c_str());

    // Rank 0 alone reads the deck and flags; every rank agrees on the outcome.
    enum Action : int { kRun = 0, kPrintConfig, kVersion, kHelp };
    int action = kRun;
    std::string deck, help;
    ResumePoint resume;
    agree(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        CommandLine line = parse_command_line(argc, argv);
        if (line.show_help) {
            action = kHelp;
            help = line.help_text;
            return;
        }
        if (line.show_version) {
            action = kVersion;
            return;
        }
        validate_config(line.config);
        if (line.print_config) action = kPrintConfig;
        if (line.config.resume && !line.print_config) resume = find_resume_point(line.config);
        deck = config_to_toml(line.config);
    });
    MPI_CHECK(MPI_Bcast(&resume, 2, MPI_INT64_T, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(&action, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (action == kHelp || action == kVersion) {
        if (rank == 0) std::fputs(action == kHelp ? help.c_str() : version_text().c_str(), stdout);
        return 0;
    }
    broadcast(deck);
    if (action == kPrintConfig) {
        if (rank == 0) std::fputs(deck.c_str(), stdout);
        return 0;
    }
    setup.config = config_from_toml(deck, "the broadcast deck");
    const Config& config = setup.config;

    agree(MPI_COMM_WORLD, [&] {
        setup.placement = place_pairs(rank, size, config.pairing == Pairing::split);
        if (rank == 0) check_output_paths(config);
    });

    // Device: every rank must end up on the same path.
    agree(MPI_COMM_WORLD, [&] {
        setup.device = open_device(config, mpi.local_rank());
        setup.device_info = setup.device->info();
    });
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

    const std::string gpu_key = setup.device_info.pci_bus_id.empty()
                                    ? mpi.host_name() + " cpu"
                                    : mpi.host_name() + " " + setup.device_info.pci_bus_id;
    const std::vector<std::string> gpu_keys = allgather_strings(gpu_key, size);
    agree(MPI_COMM_WORLD, [&] { setup.transport = open_transport(setup, size, gpu_keys); });
    // Every wait on the GPU from here on is bounded by timeout_s and watches the transport.
    setup.device->set_wait_policy(
        {config.timeout(), [transport = setup.transport.get()] { transport->check_health(); }});

    std::unique_ptr<Pipeline> pipeline;
    agree(MPI_COMM_WORLD, [&] {
        pipeline =
            std::make_unique<Pipeline>(config, *setup.device, *setup.transport, setup.placement,
                                       MPI_COMM_WORLD);
    });

    // Memory, said before the run starts: slots x tensor size, C's buffer, counters.
    std::uint64_t held[2] = {pipeline->device_bytes(), pipeline->host_bytes()};
    std::uint64_t held_max[2];
    MPI_CHECK(MPI_Allreduce(held, held_max, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
    if (rank == 0) {
        std::printf(
            "gpurelay: %s memory per rank (largest): %.1f MiB for depth %lld x %.1f MiB "
            "slots and C's %.1f MiB; pinned host %.1f MiB before the writer's buffers\n",
            setup.device->backend() == Backend::cuda ? "device" : "host",
            static_cast<double>(held_max[0]) / 1048576.0, static_cast<long long>(config.depth),
            static_cast<double>(config.tensor_bytes()) / 1048576.0,
            static_cast<double>(config.c_elements * 4) / 1048576.0,
            static_cast<double>(held_max[1]) / 1048576.0);
        std::fflush(stdout);
    }

    // Passes: compare runs without overlap first, then with; /y comes from the last pass.
    std::vector<bool> passes;
    if (config.overlap == OverlapMode::compare)
        passes = {false, true};
    else
        passes = {config.overlap == OverlapMode::on};
    const auto steps = static_cast<std::uint64_t>(config.steps);
    ResultSchema::Shape shape;
    shape.pairs = static_cast<std::uint64_t>(setup.placement.pairs);
    shape.ranks = static_cast<std::uint64_t>(size);
    shape.steps = steps;
    shape.elements = config.elements;
    shape.y_type = with_dtype(config.dtype, []<typename T>() { return element_type<T>(); });
    shape.written_steps = config.written_steps();
    shape.passes = passes;
    for (const PhaseInfo& phase : kPhases) shape.phases.emplace_back(phase.name);
    const ResultFileLayout layout = ResultSchema(shape).layout();
    const std::vector<std::string> hosts = allgather_strings(mpi.host_name(), size);
    const std::vector<std::string> devices = allgather_strings(
        setup.device_info.name +
            (setup.device_info.pci_bus_id.empty() ? "" : " " + setup.device_info.pci_bus_id),
        size);
    std::optional<ResultFile> file;
    agree(MPI_COMM_WORLD, [&] {
        file.emplace(config.resume
                         ? ResultFile::reopen(MPI_COMM_WORLD, config.output, config.overwrite,
                                              layout, root_attributes(setup, hosts, devices))
                         : ResultFile::create(MPI_COMM_WORLD, config.output, config.overwrite,
                                              layout, root_attributes(setup, hosts, devices)));
    });

    const bool consumer = setup.placement.role != Role::producer;
    std::unique_ptr<ResultWriter> writer;
    if (consumer && !layout.written_steps.empty()) {
        ResultWriter::RowCheck check = with_dtype(config.dtype, [&]<typename T>() {
            return ResultWriter::RowCheck(
                [alpha = static_cast<T>(config.alpha), seed = config.seed,
                 elements = config.elements](const void* row, std::int64_t step) {
                    const Span<const T> y{static_cast<const T*>(row), elements};
                    return ResultWriter::RowCheckResult{
                        std::min(kRowSpotSamples, elements),
                        spot_check_y(y, alpha, static_cast<std::uint64_t>(step), seed,
                                     kRowSpotSamples)};
                });
        });
        writer = std::make_unique<ResultWriter>(*setup.device, *file,
                                                static_cast<std::uint64_t>(setup.placement.pair),
                                                config.tensor_bytes(), kWriterBuffers, check);
    }

    Progress progress(rank == 0 && !config.quiet,
                      config.steps * static_cast<std::int64_t>(passes.size()));
    RunSummary summary;
    StopVote stop_vote(MPI_COMM_WORLD, config.timeout());
    int stopped_by = 0;
    std::int64_t stopped_pass = 0, stopped_at = 0;
    for (std::size_t i = static_cast<std::size_t>(resume.pass); i < passes.size(); ++i) {
        // Every rank passes the same step boundaries, so the collective flush lines up; the
        // writer is drained first because only one thread may be inside HDF5 at a time.
        current_pass_overlap = passes[i] ? 1 : 0;
        auto on_step = [&](std::int64_t s) {
            step_in_progress = std::min(s + 1, config.steps - 1);
            progress.step_done();
            if (config.flush_every > 0 && (s + 1) % config.flush_every == 0) {
                if (writer) writer->drain();
                file->flush();
            }
            stopped_by = stop_vote.after_step();
            return stopped_by != 0;
        };
        const std::int64_t first_step =
            static_cast<std::int64_t>(i) == resume.pass ? resume.step : 0;
        PassResult result;
        step_in_progress = first_step;
        try {
            // Only the last pass writes /y: file I/O in both would differ anyway (the first
            // writes into fresh extents), so the overlap-off pass stays free of it and the
            // report says when the writer held up the other one.
            result = pipeline->run(passes[i], i + 1 == passes.size() ? writer.get() : nullptr,
                                   on_step, first_step);
        } catch (...) {
            // Streams, proxies and the writer may still be using the pipeline's buffers: end the
            // job here, before unwinding frees them under running threads.
            fail_fatally(std::current_exception());
        }
        // Each rank files its own rows: timings under its rank, counts under its pair.
        for (const PhaseInfo& phase : kPhases) {
            std::vector<double> row(steps);
            for (std::size_t s = 0; s < steps; ++s) row[s] = result.steps[s].*phase.member;
            file->write_matrix_row(ResultSchema::timings_path(passes[i], phase.name),
                                   static_cast<std::uint64_t>(rank), row.data());
        }
        if (consumer) {
            const auto pair = static_cast<std::uint64_t>(setup.placement.pair);
            file->write_matrix_row(ResultSchema::x_mismatches_path(passes[i]), pair,
                                   result.x_mismatches.data());
            file->write_matrix_row(ResultSchema::c_mismatches_path(passes[i]), pair,
                                   result.c_mismatches.data());
        }
        if (stopped_by != 0) {
            stopped_pass = static_cast<std::int64_t>(i);
            stopped_at = result.end_step;
            break;
        }
        summary.passes.push_back(summarize_pass(MPI_COMM_WORLD, config, setup.placement, result));
    }
    if (stopped_by != 0) {
        // Stopped by SIGTERM/SIGINT: every completed step is in the file, which stays
        // PATH.partial with complete = 0 and says where to resume.
        writer.reset();
        file->close(false, {{"stopped_at_step", stopped_at},
                            {"stopped_pass", stopped_pass},
                            {"stop_signal", static_cast<std::int64_t>(stopped_by)},
                            {"finished_utc", utc_timestamp()}});
        if (rank == 0) {
            std::fprintf(stderr,
                         "gpurelay: stopped by %s after step %lld of %lld (%s pass); completed "
                         "steps are in %s.partial (complete = 0); run again with --resume to "
                         "finish\n",
                         stopped_by == SIGINT ? "SIGINT" : "SIGTERM",
                         static_cast<long long>(stopped_at), static_cast<long long>(config.steps),
                         ResultSchema::pass_group(passes[static_cast<std::size_t>(stopped_pass)]).c_str(),
                         config.output.c_str());
        }
        return static_cast<int>(stopped_by == SIGINT ? ExitCode::interrupted_int
                                                     : ExitCode::interrupted_term);
    }

    summary.config = config;
    summary.backend = setup.device->backend() == Backend::cuda ? "cuda" : "cpu";
    summary.transport = setup.transport->name();
    summary.transport_note = setup.transport_note;
    summary.world_size = size;
    summary.pairs = setup.placement.pairs;
    summary.ranks = gather_rank_info(
        MPI_COMM_WORLD, {mpi.host_name(), setup.device_info.name, setup.device_info.pci_bus_id,
                         std::string(to_string(setup.placement.role)),
                         peer_link(setup, hosts, gpu_keys, mpi.host_name()), setup.placement.pair});
    if (summary.passes.size() == 2) {
        summary.overlap_speedup =
            summary.passes[0].time_per_step_ms / summary.passes[1].time_per_step_ms;
        summary.overlap_ideal_ms =
            step_bound_ms(phase_medians(summary.passes[0]), config.depth, /*overlap=*/true);
    }
    std::uint64_t memory[2] = {
        pipeline->device_bytes(),
        pipeline->host_bytes() + (writer ? kWriterBuffers * config.tensor_bytes() : 0)};
    std::uint64_t largest[2];
    MPI_CHECK(MPI_Allreduce(memory, largest, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
    summary.device_bytes = largest[0];
    summary.host_bytes = largest[1];
    double io[2] = {writer ? static_cast<double>(writer->bytes_written()) : 0.0,
                    writer ? writer->write_seconds() : 0.0};
    double io_total[2];
    MPI_CHECK(MPI_Allreduce(io, io_total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    summary.write_gbps = io_total[1] > 0 ? io_total[0] / io_total[1] / 1e9 : 0.0;
    summary.versions = versions_line();
    summary.timestamp = utc_timestamp();
    summary.git_hash = kGitHash;
    writer.reset();

    const bool verified = summary.verified();
    const PassSummary& main_pass = summary.main_pass();
    file->close(true,
                {{"verified", static_cast<std::int64_t>(verified ? 1 : 0)},
                 {"x_mismatches", static_cast<std::int64_t>(main_pass.x_mismatches)},
                 {"c_mismatches", static_cast<std::int64_t>(main_pass.c_mismatches)},
                 {"overlap_speedup", summary.overlap_speedup},
                 {"cold_step_ms", summary.passes.front().cold_step_ms},
                 {"stopped_at_step", static_cast<std::int64_t>(-1)},
                 {"resumed_from_step", config.resume ? resume.step : static_cast<std::int64_t>(-1)},
                 {"finished_utc", utc_timestamp()}});
    file.reset();

    if (rank == 0) {
        print_report(stdout, summary);
        if (!config.summary_json.empty())
            write_file_atomically(config.summary_json, summary_json(summary));
        if (!config.results_csv.empty()) append_results_csv(config.results_csv, summary);
        if (!verified) {
            std::fprintf(stderr,
                         "gpurelay: verification failed: results differ from the formula "
                         "(see the report above)\n");
        }
    }
    return static_cast<int>(verified ? ExitCode::ok : ExitCode::verification);
}

}  // namespace

int run_gpurelay(int argc, char** argv) {
    std::optional<MpiSession> mpi;
    try {
        mpi.emplace(&argc, &argv);
    } catch (const Error& e) {
        std::fprintf(stderr, "gpurelay: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.code()));
        return static_cast<int>(e.code());
    }
    set_fatal_handler(abort_job);
    install_stop_handlers();
    try {
        return run(*mpi, argc, argv);
    } catch (const AgreedError& e) {
        // Every rank holds this error; one line from rank 0, and every rank returns its code.
        if (mpi->world_rank() == 0) std::fprintf(stderr, "gpurelay: %s\n", e.what());
        return static_cast<int>(e.code());
    } catch (const Error& e) {
        abort_job(e);
    } catch (const std::exception& e) {
        abort_job(runtime_error(e.what()));
    }
    return static_cast<int>(ExitCode::runtime);
}

}  // namespace gpurelay
