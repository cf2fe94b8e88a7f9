#include "app/finish.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "app/provenance.hpp"
#include "io/result_schema.hpp"
#include "mpi/session.hpp"
#include "mpi/stop_request.hpp"
#include "report/render.hpp"
#include "report/write.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// Rank 0, once the file is closed: the report (for several sizes, their table), the JSON summary
// and the CSV rows, of the sizes this launch ran to their end.
void report_sizes(const Config& config, const std::vector<RunSummary>& sizes,
                  const ResumePoint& resume, bool verified) {
    if (!config.quiet) {  // --quiet: errors only
        if (config.several_sizes()) {
            print_size_table(stdout, sizes, static_cast<std::size_t>(resume.size));
        } else {
            print_report(stdout, sizes.front());
        }
    }
    if (!config.summary_json.empty()) {
        write_file_atomically(config.summary_json, config.several_sizes()
                                                       ? sizes_json(sizes, verified)
                                                       : summary_json(sizes.front()));
    }
    if (!config.results_csv.empty()) append_results_csv(config.results_csv, sizes);
    if (!verified) {
        std::fprintf(stderr,
                     "gpurelay: verification failed: results differ from the formula (%s)\n",
                     config.quiet ? "the counts are in the file's verification group"
                                  : "see the report above");
    }
}

// Collective: rank 0's `text` on every rank (every rank writes the file's attributes alike).
std::string from_root(std::string text) {
    return broadcast_text(MPI_COMM_WORLD, std::move(text),
                          "the broadcast of the report's figures for the file");
}

// What the file's close writes: its root's attributes and its groups'.
struct Closing {
    Attributes root;
    GroupAttributes groups;
};

// The teardown both ends share: the writer's rows out, no step to name any more, then the file
// closed with what `closing` works out (collective: it may gather from every rank).
void close_file(Run& run, bool complete, const std::function<Closing()>& closing) {
    run.outputs.end_writer();
    run.watch.leave_passes();
    const Closing attributes = closing();
    run.outputs.close(run.setup.config, run.rank, complete, attributes.root, attributes.groups);
}

// A complete run's root attributes (for one size, its verdict and figures) and, for one size, its
// passes' groups. Collective.
Closing complete_attributes(const Run& run, const std::vector<RunSummary>& sizes, bool verified) {
    const Config& config = run.setup.config;
    Closing closing;
    // For one size, its verdict and figures.
    closing.root = config.several_sizes() ? Attributes{{"verified", verified}}
                                          : verdict_attributes(sizes.front(), verified);
    closing.root.insert(
        closing.root.end(),
        {{"stopped_at_step", static_cast<std::int64_t>(-1)},
         {"resumed_from_step", config.resume ? run.resume.step : static_cast<std::int64_t>(-1)},
         {"finished_utc", utc_timestamp()}});
    // The launch ended at the last step of the run's last size and pass.
    const Stop end{0, static_cast<std::int64_t>(config.size_list().size()) - 1,
                   static_cast<std::int64_t>(run.passes.size()) - 1, config.steps};
    closing.root.push_back({"launches", from_root(launches_json(run.resume, end))});
    // Every rank, as the JSON's "ranks": the report names them one a line only in small runs.
    if (!sizes.empty()) {
        closing.root.push_back({"ranks", from_root(ranks_json(sizes.front()))});
    }
    if (!config.several_sizes()) {
        closing.groups = pass_attributes(MPI_COMM_WORLD, sizes.front());
    } else {
        closing.root.push_back(
            {"resumed_from_size", config.resume ? run.resume.size : static_cast<std::int64_t>(-1)});
    }
    return closing;
}

}  // namespace

int finish(Run& run, const std::vector<RunSummary>& sizes, std::int64_t sizes_failed) {
    const bool verified = sizes_failed == 0;
    close_file(run, true, [&] { return complete_attributes(run, sizes, verified); });
    if (run.rank == 0) report_sizes(run.setup.config, sizes, run.resume, verified);
    return static_cast<int>(verified ? ExitCode::ok : ExitCode::verification);
}

int finish_stopped(Run& run, const Stop& stop) {
    const Config& config = run.setup.config;
    close_file(run, false, [&] {
        return Closing{{{"stopped_at_step", stop.step},
                        {"stopped_pass", stop.pass},
                        {"stopped_size", stop.size},
                        {"sizes_failed", stop.sizes_failed},
                        {"stop_signal", static_cast<std::int64_t>(stop.signal)},
                        {"finished_utc", utc_timestamp()},
                        {"launches", from_root(launches_json(run.resume, stop))}},
                       {}};
    });
    if (run.rank != 0) return static_cast<int>(stopped_exit_code(stop.signal));
    const std::string size_words =
        config.several_sizes()
            ? " of size " + std::to_string(stop.size + 1) + " of " +
                  std::to_string(config.sizes.size()) + " (" +
                  std::to_string(config.sizes[static_cast<std::size_t>(stop.size)]) + " elements)"
            : std::string();
    std::fprintf(stderr,
                 "gpurelay: stopped by %s%s after step %lld of %lld (%s pass%s); completed "
                 "steps are in %s.partial (complete = 0); to finish it, run under the same "
                 "launcher: %s\n",
                 stop_signal_name(stop.signal),
                 // Open MPI's mpirun (which sets OMPI_COMM_WORLD_SIZE; srun does not) turns a
                 // Ctrl-C into SIGTERM for its ranks.
                 stop.signal == SIGTERM && std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr
                     ? " (if mpirun was signalled: it sends SIGTERM for SIGINT too, and "
                       "SIGKILL a second later; SIGUSR1 to mpirun stops without that)"
                     : "",
                 static_cast<long long>(stop.step), static_cast<long long>(config.steps),
                 ResultSchema::pass_group(run.passes[static_cast<std::size_t>(stop.pass)]).c_str(),
                 size_words.c_str(), config.output.c_str(), resume_command(config).c_str());
    return static_cast<int>(stopped_exit_code(stop.signal));
}

}  // namespace gpurelay
