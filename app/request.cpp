#include "app/request.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>

#include "app/provenance.hpp"
#include "config/command_line.hpp"
#include "io/output_path.hpp"
#include "io/result_file.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "report/write.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

enum Action : int { kRun = 0, kPrintConfig, kPrintText };

// Names tried for a run that names no output and starts in the second of another's.
constexpr int kDefaultNamesPerSecond = 100;

bool anything_at(const std::string& path) {
    std::error_code ignored;
    return std::filesystem::exists(std::filesystem::symlink_status(path, ignored));
}

// A run that names no output (output = ""): --resume continues the default outputs' .partial
// whose deck is this run's; a fresh run takes the first default name that nothing stands at,
// locked at once, so that a job starting in the same second takes the next.
void name_default_output(Config& config, OutputLock& lock) {
    if (config.resume) {
        lock = choose_partial_to_resume(config);
        return;
    }
    const std::time_t start = std::time(nullptr);
    // The default names' folder is gpurelay's own, made where it is missing: an installed gpurelay
    // runs from any folder. A folder the user names must exist.
    std::error_code ignored;
    std::filesystem::create_directory(
        std::filesystem::path(default_output_path(start, 1)).parent_path(), ignored);
    // The folder's and the names' refusals as for any output, before any name is taken.
    check_output_target("output", default_output_path(start, kDefaultNamesPerSecond),
                        {".partial", ".partial.tmp", ".lock"}, "");
    for (int count = 1; count <= kDefaultNamesPerSecond; ++count) {
        const std::string path = default_output_path(start, count);
        if (anything_at(path) || anything_at(path + ".partial")) continue;
        std::optional<OutputLock> taken = OutputLock::try_acquire(path);
        // Looked at again under the lock: a run that held it may have made the file.
        if (taken && !anything_at(path) && !anything_at(path + ".partial")) {
            config.output = path;
            lock = std::move(*taken);
            return;
        }
    }
    throw usage_error("output: " + std::to_string(kDefaultNamesPerSecond) + " names from '" +
                      default_output_path(start, 1) +
                      "' on are taken: name the output with --output");
}

// Rank 0, before any GPU or file work: every file the run writes resolved (a link in the last
// place followed) and checked by the rule of what may be replaced, and no two of them one file.
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

// Rank 0: what the command line asks; for a run, its outputs checked and locked, and where it
// starts. `deck` gets the resolved deck, `help` what --help, --version or --print-sizes prints.
Action read_command_line(int argc, char** argv, Request& request, std::string& deck,
                         std::string& help) {
    CommandLine line = parse_command_line(argc, argv);
    if (line.show_help || line.show_version || !line.sizes_to_print.empty()) {
        help = line.show_help ? line.help_text : line.show_version ? version_text() : "";
        for (const std::uint64_t size : line.sizes_to_print) help += std::to_string(size) + '\n';
        return kPrintText;
    }
    validate_config(line.config);
    int world_size = 1;
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    validate_for_world(line.config, world_size);
    Action action = kPrintConfig;
    if (!line.print_config) {
        action = kRun;
        if (line.config.output.empty()) name_default_output(line.config, request.lock);
        check_output_paths(line.config);
        if (!request.lock.held()) request.lock = OutputLock::acquire(line.config.output);
        // Checked again under the lock: a job that was still writing may just have ended.
        if (!line.config.resume) {
            ResultFile::check_target(line.config.output, line.config.overwrite);
        } else {
            request.resume = find_resume_point(line.config);
        }
        request.resume.started_utc = utc_timestamp();
    }
    deck = config_to_toml(line.config);
    return action;
}

}  // namespace

Request read_request(int rank, int argc, char** argv) {
    Request request;
    int action = kRun;
    std::string deck, help;
    agree(MPI_COMM_WORLD, [&] {
        if (rank == 0) action = read_command_line(argc, argv, request, deck, help);
    });
    {
        // Where the run starts; the launches' record stays on rank 0, which writes it.
        ResumePoint& at = request.resume;
        std::int64_t point[] = {at.pass,     at.step, at.complete,
                                at.verified, at.size, at.sizes_failed};
        const Deadline bound("the broadcast of the request");
        MPI_CHECK(MPI_Bcast(point, std::size(point), MPI_INT64_T, 0, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Bcast(&action, 1, MPI_INT, 0, MPI_COMM_WORLD));
        std::tie(at.pass, at.step, at.complete, at.verified, at.size, at.sizes_failed) =
            std::tie(point[0], point[1], point[2], point[3], point[4], point[5]);
    }
    if (action == kPrintText) {
        if (rank == 0) std::fputs(help.c_str(), stdout);
        return request;
    }
    deck = broadcast_text(MPI_COMM_WORLD, deck, "the broadcast of the deck");
    if (action == kPrintConfig) {
        if (rank == 0) std::fputs(deck.c_str(), stdout);
        return request;
    }
    request.config = config_from_toml(deck, "the broadcast deck");
    return request;
}

int publish_complete(const Config& config, const ResumePoint& resume, int rank) {
    agree(MPI_COMM_WORLD, [&] {
        if (rank == 0) ResultFile::publish_complete_partial(config.output, config.overwrite);
    });
    if (rank == 0) {
        std::fprintf(stderr,
                     "gpurelay: '%s.partial' was already complete (its run ended before the "
                     "rename): published as '%s'%s\n",
                     config.output.c_str(), config.output.c_str(),
                     resume.verified != 0 ? "" : "; it failed verification");
    }
    return static_cast<int>(resume.verified != 0 ? ExitCode::ok : ExitCode::verification);
}

}  // namespace gpurelay
