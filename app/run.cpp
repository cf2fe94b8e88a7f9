// The run, as the algorithm reads: read the request, set up, open the outputs, run the passes,
// finish; each step in a file of its own beside this one.
#include "app/run.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "app/delayed_transport.hpp"
#include "app/fatal.hpp"
#include "app/finish.hpp"
#include "app/outputs.hpp"
#include "app/passes.hpp"
#include "app/request.hpp"
#include "app/setup.hpp"
#include "mpi/agreement.hpp"
#include "mpi/session.hpp"
#include "mpi/stop_request.hpp"
#include "mpi/wait.hpp"
#include "pipeline/pipeline.hpp"
#include "report/render.hpp"
#include "runtime/error.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {
namespace {

// duration: pass k of the P this launch runs ends once (k + 1) / P of it has passed.
std::vector<std::chrono::steady_clock::time_point> pass_deadlines(
    const Config& config, const ResumePoint& resume, std::chrono::steady_clock::time_point start) {
    if (config.duration_s <= 0) return {};
    const std::int64_t per_size = config.overlap == OverlapMode::compare ? 2 : 1;
    const std::int64_t passes =
        (static_cast<std::int64_t>(config.size_list().size()) - resume.size) * per_size -
        resume.pass;
    std::vector<std::chrono::steady_clock::time_point> deadlines;
    for (std::int64_t k = 1; k <= passes; ++k) {
        const std::chrono::duration<double> share(config.duration_s * static_cast<double>(k) /
                                                  static_cast<double>(passes));
        deadlines.push_back(start +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(share));
    }
    return deadlines;
}

int run(MpiSession& mpi, StepWatch& watch, std::chrono::steady_clock::time_point start, int argc,
        char** argv) {
    const int rank = mpi.world_rank();
    // Named like the streams ("rank 1 consumer: comm stream"), so the timeline rows line up.
    nvtx::name_current_thread(("rank " + std::to_string(rank) + " main").c_str());
    const Request request = read_request(rank, argc, argv);
    if (!request.config) return 0;
    const Config& config = *request.config;
    const ResumePoint& resume = request.resume;
    // From here every wait without a bound of its own (barriers, reductions, the file's
    // collective calls, MPI_Finalize) is bounded by the deck's timeout_s.
    set_wait_timeout(config.timeout());
    if (resume.complete != 0) return publish_complete(config, resume, rank);

    const Setup setup = set_up(mpi, config);
    // Tests only: debug_delay_rank's receives start debug_delay_us late (0: no delay).
    DelayedTransport transport(
        *setup.transport,
        std::chrono::microseconds(rank == config.debug_delay_rank ? config.debug_delay_us : 0));
    std::unique_ptr<Pipeline> pipeline;
    agree(MPI_COMM_WORLD, [&] {
        pipeline = make_pipeline(setup.spec, *setup.device, transport, setup.placement.role,
                                 MPI_COMM_WORLD);
    });
    // Once the pipeline's host streams exist: how the hosts wait depends on how many threads work.
    choose_host_wait(config, setup.device->backend() == Backend::cuda);

    const std::vector<bool> passes = passes_of(config);
    Outputs outputs = Outputs::open(mpi, setup, passes);
    // What runs where, said before the steps (and their progress lines) start.
    RunSummary head = summarize(mpi, setup, config, *pipeline, outputs, {});
    if (config.resume) {
        head.resumed_step = resume.step;
        head.resumed_pass = resume.pass;
        head.resumed_size = resume.size;
    }
    if (rank == 0 && !config.quiet) print_run_header(stdout, head);  // --quiet: errors only
    // A resumed run starts the count where the stopped one left it.
    const auto pass_count = static_cast<std::int64_t>(passes.size());
    Run run{mpi, setup, *pipeline, outputs, passes, resume, rank,
            Progress(rank == 0 && !config.quiet, config.steps, passes,
                     static_cast<std::int64_t>(config.size_list().size()),
                     (resume.size * pass_count + resume.pass) * config.steps + resume.step),
            // A relay's first stage runs a step ahead of each stage behind it once the line is
            // full: the vote's cadence lets the loops drift at least that far apart.
            StopVote(MPI_COMM_WORLD, config.timeout(),
                     config.pattern == Pattern::relay ? setup.placement.group_size : 1),
            watch};
    run.stop_vote.set_deadlines(pass_deadlines(config, resume, start));
    run.progress.end_by(config.duration_s);
    std::vector<RunSummary> sizes;
    const Stop stop = run_sizes(run, sizes);
    if (stop.signal != 0) return finish_stopped(run, stop);
    return finish(run, sizes, stop.sizes_failed);
}

}  // namespace

int run_gpurelay(int argc, char** argv) {
    // Where a run's duration counts from.
    const auto start = std::chrono::steady_clock::now();
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
    // Outlives the run, so that an error it throws is still named by its step.
    StepWatch watch;
    try {
        return run(*mpi, watch, start, argc, argv);
    } catch (const AgreedError& e) {
        // Every rank holds this error; one line from rank 0, and every rank returns its code.
        if (mpi->world_rank() == 0) std::fprintf(stderr, "gpurelay: %s\n", e.what());
        if (e.code() == ExitCode::runtime) {
            // A library call failed (say, a write to a full disk while the file was made), and
            // the libraries' own teardown in MPI_Finalize may fail on what it left (HDF5 1.10
            // crashes closing a file whose close failed): every rank ends here instead.
            std::fflush(nullptr);
            std::_Exit(static_cast<int>(e.code()));
        }
        return static_cast<int>(e.code());
    } catch (const Error& e) {
        abort_job(e);
    } catch (const std::exception& e) {
        abort_job(runtime_error(e.what()));
    }
    return static_cast<int>(ExitCode::runtime);
}

}  // namespace gpurelay
