// The run, as the algorithm reads: read the request, set up, open the outputs, run the passes,
// finish. The steps themselves live in the folders below (setup.cpp and provenance.cpp here).
#include "app/run.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "app/delayed_transport.hpp"
#include "app/provenance.hpp"
#include "app/setup.hpp"
#include "comm/agreement.hpp"
#include "comm/mpi_error.hpp"
#include "comm/mpi_session.hpp"
#include "comm/mpi_wait.hpp"
#include "comm/stop_request.hpp"
#include "config/command_line.hpp"
#include "config/config.hpp"
#include "io/output_lock.hpp"
#include "io/result_file.hpp"
#include "io/result_schema.hpp"
#include "io/result_writer.hpp"
#include "io/resume.hpp"
#include "kernels/kernels.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/pipeline.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

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

// Tests only (debug_stop_flush, debug_stop_close): the chosen rank stops itself here, as a peer
// stopped by a signal would, so that the others' next collective call is the wait under test.
void debug_stop_if(const Config& config, int rank, bool here) {
    if (here && rank == config.debug_stop_rank) std::raise(SIGSTOP);
}

// Whether Open MPI's mpirun started this process (it sets OMPI_COMM_WORLD_SIZE; srun does not).
bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

// Broadcasts a string from rank 0.
void broadcast(std::string& text) {
    const Deadline bound("the broadcast of the deck");
    int length = static_cast<int>(text.size());
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD));
    text.resize(static_cast<std::size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD));
}

// Rank 0 alone reads the deck and flags; every rank agrees on the outcome. Returns the deck to
// run, or nothing when the request is answered already (--help, --version, --print-config).
// Rank 0 also checks every output path, takes the output's lock (held in `lock` for the run),
// and reads where a resumed run starts.
std::optional<Config> read_request(int rank, int argc, char** argv, ResumePoint& resume,
                                   OutputLock& lock) {
    enum Action : int { kRun = 0, kPrintConfig, kVersion, kHelp };
    int action = kRun;
    std::string deck, help;
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
        if (line.print_config) {
            action = kPrintConfig;
        } else {
            check_output_paths(line.config);
            lock = OutputLock::acquire(line.config.output);
            // Checked again under the lock: a job that was still writing may just have ended.
            if (!line.config.resume) {
                ResultFile::check_target(line.config.output, line.config.overwrite);
            } else {
                resume = find_resume_point(line.config);
            }
        }
        deck = config_to_toml(line.config);
    });
    static_assert(std::is_trivially_copyable_v<ResumePoint> && sizeof(ResumePoint) == 48,
                  "ResumePoint travels as bytes");
    {
        const Deadline bound("the broadcast of the request");
        MPI_CHECK(MPI_Bcast(&resume, sizeof resume, MPI_BYTE, 0, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Bcast(&action, 1, MPI_INT, 0, MPI_COMM_WORLD));
    }
    if (action == kHelp || action == kVersion) {
        if (rank == 0) std::fputs(action == kHelp ? help.c_str() : version_text().c_str(), stdout);
        return std::nullopt;
    }
    broadcast(deck);
    if (action == kPrintConfig) {
        if (rank == 0) std::fputs(deck.c_str(), stdout);
        return std::nullopt;
    }
    return config_from_toml(deck, "the broadcast deck");
}

// Compare runs without overlap first, then with; /y comes from the last pass.
std::vector<bool> passes_of(const Config& config) {
    if (config.overlap == OverlapMode::compare) return {false, true};
    return {config.overlap == OverlapMode::on};
}

// The result writer as the pipeline's way out for y.
class WriterSink final : public RowSink {
  public:
    explicit WriterSink(ResultWriter& writer) : writer_(writer) {}
    Slot acquire() override {
        const ResultWriter::Slot slot = writer_.acquire();
        return {slot.index, slot.host, slot.ready};
    }
    void submit(const Slot& slot, std::uint64_t row, std::int64_t step) override {
        writer_.submit({slot.index, slot.host, slot.ready}, row, step);
    }
    void drain() override { writer_.drain(); }
    double waited_ms() const override { return writer_.waited_ms(); }
    std::uint64_t checked() const override { return writer_.checked(); }
    std::uint64_t mismatches() const override { return writer_.mismatches(); }

  private:
    ResultWriter& writer_;
};

// The result file, the writer of /y (consumers, when rows are kept), and every rank's host.
struct Outputs {
    std::vector<std::string> hosts;
    std::optional<ResultFile> file;
    std::unique_ptr<ResultWriter> writer;
    std::unique_ptr<WriterSink> sink;  // the writer, as the pipeline sees it
};

// One size of the run: the run as it is for that size alone, and where its datasets lie.
struct SizeCase {
    std::size_t index = 0;
    Config config;      // elements = this size, and no other sizes
    std::string group;  // "" for a run of one size (today's layout); "/cases/i" for several
};

std::vector<SizeCase> cases_of(const Config& config) {
    std::vector<SizeCase> cases;
    const std::vector<std::uint64_t> sizes = config.size_list();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        cases.push_back({i, config.sized(sizes[i]),
                         config.several_sizes() ? ResultSchema::case_group(i) : std::string()});
    }
    return cases;
}

ResultSchema schema_of(const Setup& setup, const std::vector<bool>& passes, int size) {
    const Config& config = setup.config;
    ResultSchema::Shape shape;
    shape.pairs = static_cast<std::uint64_t>(setup.placement.pairs);
    shape.ranks = static_cast<std::uint64_t>(size);
    shape.steps = static_cast<std::uint64_t>(config.steps);
    shape.elements = config.elements;
    shape.sizes = config.sizes;
    shape.y_type = with_dtype(config.dtype, []<typename T>() { return element_type<T>(); });
    shape.written_steps = config.written_steps();
    shape.passes = passes;
    for (const PhaseInfo& phase : kPhases) shape.phases.emplace_back(phase.name);
    return ResultSchema(shape);
}

// Each row of /y is spot-checked on the host before it is written, against the formula (for an
// all-reduce, of the group's sum), for the size `config` runs.
ResultWriter::RowCheck row_check(const Config& config, const PairPlacement& placement) {
    return with_dtype(config.dtype, [&]<typename T>() {
        return ResultWriter::RowCheck(
            [alpha = static_cast<T>(config.alpha), seed = config.seed, elements = config.elements,
             form = received_form(config, placement)](const void* row, std::int64_t step) {
                const Span<const T> y{static_cast<const T*>(row), elements};
                return ResultWriter::RowCheckResult{
                    std::min(kRowSpotSamples, elements),
                    spot_check_y(y, alpha, static_cast<std::uint64_t>(step), seed, kRowSpotSamples,
                                 form)};
            });
    });
}

// Collective: every rank's placement (its cores, their NUMA nodes, its GPU's node).
std::vector<Placement> gather_placements(const Setup& setup, int size) {
    const Placement mine = this_process_placement(setup.device_info.pci_bus_id);
    // One gather: the fields joined by a character none of them holds.
    const std::vector<std::string> joined =
        allgather_strings(mine.cores + '|' + mine.core_numa + '|' + mine.gpu_numa, size);
    std::vector<Placement> placements;
    for (const std::string& text : joined) {
        const std::size_t first = text.find('|'), second = text.find('|', first + 1);
        Placement p;
        p.cores = text.substr(0, first);
        p.core_numa = text.substr(first + 1, second - first - 1);
        p.gpu_numa = text.substr(second + 1);
        placements.push_back(p);
    }
    return placements;
}

// Collective: creates the result file (or reopens the .partial of a resumed run).
Outputs open_outputs(const MpiSession& mpi, const Setup& setup, const std::vector<bool>& passes) {
    const Config& config = setup.config;
    const int size = mpi.world_size();
    const ResultFileLayout layout = schema_of(setup, passes, size).layout();
    Outputs outputs;
    outputs.hosts = allgather_strings(mpi.host_name(), size);
    const std::vector<std::string> devices = allgather_strings(
        setup.device_info.name +
            (setup.device_info.pci_bus_id.empty() ? "" : " " + setup.device_info.pci_bus_id),
        size);
    const std::vector<Placement> placements = gather_placements(setup, size);
    // A collective step of the file (a rank stuck on a hung file system) is bounded like every
    // other wait.
    const Deadline deadline(config.timeout(), "making the result file");
    agree(MPI_COMM_WORLD, [&] {
        const Attributes attributes = root_attributes(setup, outputs.hosts, devices, placements);
        outputs.file.emplace(config.resume
                                 ? ResultFile::reopen(MPI_COMM_WORLD, config.output,
                                                      config.overwrite, layout, attributes)
                                 : ResultFile::create(MPI_COMM_WORLD, config.output,
                                                      config.overwrite, layout, attributes));
    });
    const bool consumer = setup.placement.role != Role::producer;
    if (consumer && !layout.written_steps.empty()) {
        // Buffers for the largest size; each size switches the writer to its rows.
        const Config first = config.sized(config.elements);
        outputs.writer = std::make_unique<ResultWriter>(
            *setup.device, *outputs.file, static_cast<std::uint64_t>(setup.placement.pair),
            setup.spec.bytes, kWriterBuffers, row_check(first, setup.placement));
        outputs.sink = std::make_unique<WriterSink>(*outputs.writer);
    }
    return outputs;
}

// Each rank files its own rows of a pass: timings under its rank, counts under its pair.
void file_pass(ResultFile& file, const Setup& setup, const std::string& group, bool overlap,
               const PassResult& result, int rank) {
    for (const PhaseInfo& phase : kPhases) {
        std::vector<double> row(result.steps.size());
        for (std::size_t s = 0; s < row.size(); ++s) row[s] = result.steps[s].*phase.member;
        file.write_matrix_row(ResultSchema::timings_path(group, overlap, phase.name),
                              static_cast<std::uint64_t>(rank), row.data());
    }
    if (setup.placement.role == Role::producer) return;
    const auto pair = static_cast<std::uint64_t>(setup.placement.pair);
    file.write_matrix_row(ResultSchema::x_mismatches_path(group, overlap), pair,
                          result.x_mismatches.data());
    file.write_matrix_row(ResultSchema::c_mismatches_path(group, overlap), pair,
                          result.c_mismatches.data());
}

// Where the passes ended: at the end, or after the step every rank agreed to stop on.
struct Stop {
    int signal = 0;  // SIGTERM, SIGINT or SIGUSR1; 0 when every pass ran to its end
    std::int64_t size = 0, pass = 0, step = 0;
    // Sizes of the run that ended and failed verification, those of an earlier launch included.
    std::int64_t sizes_failed = 0;
};

// What every size's passes share: the pipeline and the outputs, where a resumed run starts, the
// progress line and the ranks' stop vote.
struct Run {
    const MpiSession& mpi;
    const Setup& setup;
    Pipeline& pipeline;
    Outputs& outputs;
    const std::vector<bool>& passes;
    const ResumePoint& resume;
    int rank;
    Progress progress;
    StopVote stop_vote;
    std::int64_t flushes = 0;  // periodic flushes so far
};

// Runs the passes of one size from where a resumed run stopped, files each pass's rows and
// summarises it.
Stop run_passes(Run& run, const SizeCase& size, std::vector<PassSummary>& summaries) {
    const Config& config = run.setup.config;
    const std::vector<bool>& passes = run.passes;
    const bool resumed_size = static_cast<std::int64_t>(size.index) == run.resume.size;
    const std::size_t first_pass = resumed_size ? static_cast<std::size_t>(run.resume.pass) : 0;
    Stop stop;
    for (std::size_t i = first_pass; i < passes.size(); ++i) {
        // Every rank passes the same step boundaries, so the collective flush lines up; the
        // writer is drained first because only one thread may be inside HDF5 at a time.
        current_pass_overlap = passes[i] ? 1 : 0;
        auto on_step = [&](std::int64_t s) {
            step_in_progress = std::min(s + 1, config.steps - 1);
            run.progress.step_done();
            if (config.flush_every > 0 && (s + 1) % config.flush_every == 0) {
                if (run.outputs.writer) run.outputs.writer->drain();
                debug_stop_if(config, run.rank, ++run.flushes == config.debug_stop_flush);
                run.outputs.file->flush();
            }
            // A stop after a pass's last step would leave nothing in it to resume: that pass
            // ends as usual, and the next (if any) stops after its first step.
            const int vote = run.stop_vote.after_step();
            if (vote == 0 || s + 1 >= config.steps) return false;
            stop.signal = vote;
            return true;
        };
        const std::int64_t first_step = resumed_size && i == first_pass ? run.resume.step : 0;
        PassResult result;
        step_in_progress = first_step;
        try {
            // Only the last pass writes /y: file I/O in both would differ anyway (the first
            // writes into fresh extents), so the overlap-off pass stays free of it and the
            // report says when the writer held up the other one.
            // Each size's ceilings are measured once, in the first of its passes this launch runs.
            const bool calibrate = config.calibrate && i == first_pass;
            result = run.pipeline.run(passes[i],
                                      i + 1 == passes.size() ? run.outputs.sink.get() : nullptr,
                                      on_step, first_step, calibrate);
        } catch (...) {
            // Streams, proxies and the writer may still be using the pipeline's buffers: end the
            // job here, before unwinding frees them under running threads.
            fail_fatally(std::current_exception());
        }
        file_pass(*run.outputs.file, run.setup, size.group, passes[i], result, run.rank);
        if (stop.signal != 0) {
            stop.size = static_cast<std::int64_t>(size.index);
            stop.pass = static_cast<std::int64_t>(i);
            stop.step = result.end_step;
            break;
        }
        summaries.push_back(
            summarize_pass(MPI_COMM_WORLD, size.config, run.setup.placement, result));
    }
    return stop;
}

// Stopped by SIGTERM/SIGINT/SIGUSR1: every completed step is in the file, which stays
// PATH.partial with complete = 0 and says where to resume.
int finish_stopped(const Setup& setup, Outputs& outputs, const std::vector<bool>& passes,
                   const Stop& stop, int rank) {
    const Config& config = setup.config;
    outputs.sink.reset();
    outputs.writer.reset();
    step_in_progress = -1;
    debug_stop_if(config, rank, config.debug_stop_close);
    outputs.file->close(false, {{"stopped_at_step", stop.step},
                                {"stopped_pass", stop.pass},
                                {"stopped_size", stop.size},
                                {"sizes_failed", stop.sizes_failed},
                                {"stop_signal", static_cast<std::int64_t>(stop.signal)},
                                {"finished_utc", utc_timestamp()}});
    if (rank != 0) return static_cast<int>(stopped_exit_code(stop.signal));
    const std::string size_words =
        config.several_sizes()
            ? " of size " + std::to_string(stop.size + 1) + " of " +
                  std::to_string(config.sizes.size()) + " (" +
                  std::to_string(config.sizes[static_cast<std::size_t>(stop.size)]) + " elements)"
            : std::string();
    std::fprintf(stderr,
                 "gpurelay: stopped by %s%s after step %lld of %lld (%s pass%s); completed "
                 "steps are in %s.partial (complete = 0); run again with --resume to finish\n",
                 stop_signal_name(stop.signal),
                 // Open MPI's mpirun turns a Ctrl-C into SIGTERM for its ranks.
                 stop.signal == SIGTERM && launched_by_mpirun()
                     ? " (if mpirun was signalled: it sends SIGTERM for SIGINT too, and "
                       "SIGKILL a second later; SIGUSR1 to mpirun stops without that)"
                     : "",
                 static_cast<long long>(stop.step), static_cast<long long>(config.steps),
                 ResultSchema::pass_group(passes[static_cast<std::size_t>(stop.pass)]).c_str(),
                 size_words.c_str(), config.output.c_str());
    return static_cast<int>(stopped_exit_code(stop.signal));
}

// Collective: one size's summary (valid on rank 0; its verdict on every rank), or with no passes
// the run's header.
RunSummary summarize(const MpiSession& mpi, const Setup& setup, const Config& config,
                     const Pipeline& pipeline, const Outputs& outputs,
                     std::vector<PassSummary> passes) {
    RunSummary summary;
    summary.config = config;
    summary.backend = setup.device->backend() == Backend::cuda ? "cuda" : "cpu";
    summary.transport = setup.transport->name();
    summary.transport_note = setup.transport_note;
    summary.world_size = mpi.world_size();
    summary.pairs = setup.placement.pairs;
    if (config.pattern != Pattern::pairs) {
        summary.groups = setup.placement.groups;
        summary.group_size = setup.placement.group_size;
    }
    summary.passes = std::move(passes);
    summary.ceilings =
        summarize_ceilings(MPI_COMM_WORLD, config, setup.placement, pipeline.ceilings());
    const ResultWriter* writer = outputs.writer.get();
    const Placement placement = this_process_placement(setup.device_info.pci_bus_id);
    RankFigures mine;
    mine.info = {mpi.host_name(),
                 setup.device_info.name,
                 setup.device_info.pci_bus_id,
                 std::string(to_string(setup.placement.role)),
                 peer_link(setup, outputs.hosts, mpi.host_name()),
                 setup.placement.pair,
                 placement.cores,
                 placement.core_numa,
                 placement.gpu_numa,
                 placement.core_count,
                 // On the CPU path each host stream is a thread that runs the work, beside the
                 // main one.
                 summary.backend == "cpu" ? HostStream::live_count() + 1 : 0};
    mine.device_bytes = setup.memory.device_bytes();
    mine.host_bytes = setup.memory.host_bytes() + (writer ? kWriterBuffers * setup.spec.bytes : 0);
    mine.bytes_written = writer ? static_cast<double>(writer->bytes_written()) : 0.0;
    mine.write_seconds = writer ? writer->write_seconds() : 0.0;
    summarize_run(MPI_COMM_WORLD, mine, summary);
    summary.versions = versions_line();
    summary.timestamp = utc_timestamp();
    summary.git_hash = git_hash();
    return summary;
}

// Collective, for a run of several sizes: what a finished size says of itself in its group, and
// how many sizes are done and failed, on the root, there before the next size starts.
void file_size(ResultFile& file, const SizeCase& size, const RunSummary& summary,
               std::int64_t sizes_failed) {
    GroupAttributes groups = pass_attributes(MPI_COMM_WORLD, summary, size.group);
    const PassSummary& main_pass = summary.main_pass();
    groups.push_back({size.group,
                      {{"verified", summary.verified()},
                       {"x_mismatches", static_cast<std::int64_t>(main_pass.x_mismatches)},
                       {"c_mismatches", static_cast<std::int64_t>(main_pass.c_mismatches)},
                       {"overlap_speedup", summary.overlap_speedup},
                       {"cold_step_ms", summary.passes.front().cold_step_ms}}});
    groups.push_back({"/",
                      {{"sizes_done", static_cast<std::int64_t>(size.index + 1)},
                       {"sizes_failed", sizes_failed}}});
    file.write_attributes(groups);
}

// Runs every size from where a resumed run stopped, each resized into the same pipeline; `done`
// gets the summary of each size that ran to its end in this launch.
Stop run_sizes(Run& run, std::vector<RunSummary>& done) {
    const Config& config = run.setup.config;
    std::int64_t sizes_failed = run.resume.sizes_failed;
    for (const SizeCase& size : cases_of(config)) {
        if (static_cast<std::int64_t>(size.index) < run.resume.size) continue;
        run.pipeline.resize(size.config.elements);
        if (run.outputs.writer) {
            run.outputs.writer->switch_rows(size.index, size.config.tensor_bytes(),
                                            row_check(size.config, run.setup.placement));
        }
        std::vector<PassSummary> passes;
        Stop stop = run_passes(run, size, passes);
        if (stop.signal != 0) {
            stop.sizes_failed = sizes_failed;
            return stop;
        }
        done.push_back(summarize(run.mpi, run.setup, size.config, run.pipeline, run.outputs,
                                 std::move(passes)));
        if (!done.back().verified()) ++sizes_failed;
        if (config.several_sizes()) file_size(*run.outputs.file, size, done.back(), sizes_failed);
    }
    Stop end;
    end.sizes_failed = sizes_failed;
    return end;
}

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

// Closes the file as complete, and on rank 0 prints the report and writes the JSON and CSV: for
// one size as ever, for several the table of sizes, a case per size and a row per size.
int finish(const Setup& setup, Outputs& outputs, const std::vector<RunSummary>& sizes,
           const ResumePoint& resume, std::int64_t sizes_failed, int rank) {
    const Config& config = setup.config;
    outputs.sink.reset();
    outputs.writer.reset();
    const bool verified = sizes_failed == 0;
    step_in_progress = -1;
    Attributes attributes = {
        {"verified", verified},
        {"stopped_at_step", static_cast<std::int64_t>(-1)},
        {"resumed_from_step", config.resume ? resume.step : static_cast<std::int64_t>(-1)},
        {"finished_utc", utc_timestamp()}};
    GroupAttributes pass_groups;
    if (!config.several_sizes()) {
        const RunSummary& summary = sizes.front();
        const PassSummary& main_pass = summary.main_pass();
        attributes.insert(attributes.begin() + 1,
                          {{"x_mismatches", static_cast<std::int64_t>(main_pass.x_mismatches)},
                           {"c_mismatches", static_cast<std::int64_t>(main_pass.c_mismatches)},
                           {"overlap_speedup", summary.overlap_speedup},
                           {"cold_step_ms", summary.passes.front().cold_step_ms}});
        pass_groups = pass_attributes(MPI_COMM_WORLD, summary);
    } else {
        attributes.push_back(
            {"resumed_from_size", config.resume ? resume.size : static_cast<std::int64_t>(-1)});
    }
    debug_stop_if(config, rank, config.debug_stop_close);
    outputs.file->close(true, attributes, pass_groups);
    outputs.file.reset();
    if (rank == 0) report_sizes(config, sizes, resume, verified);
    return static_cast<int>(verified ? ExitCode::ok : ExitCode::verification);
}

// --resume of a .partial that is already complete: it only needs the name its run did not live
// to give it.
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

int run(MpiSession& mpi, int argc, char** argv) {
    const int rank = mpi.world_rank();
    // Named like the streams ("rank 1 consumer: comm stream"), so the timeline rows line up.
    nvtx::name_current_thread(("rank " + std::to_string(rank) + " main").c_str());
    ResumePoint resume;
    // Held by rank 0 from the path checks to the end of the run: no second job on this output.
    OutputLock lock;
    const std::optional<Config> config = read_request(rank, argc, argv, resume, lock);
    if (!config) return 0;
    // From here every wait without a bound of its own (barriers, reductions, the file's
    // collective calls, MPI_Finalize) is bounded by the deck's timeout_s.
    set_wait_timeout(config->timeout());
    if (resume.complete != 0) return publish_complete(*config, resume, rank);

    const Setup setup = set_up(mpi, *config);
    // Tests only: debug_delay_rank's receives start debug_delay_us late (0: no delay).
    DelayedTransport transport(
        *setup.transport,
        std::chrono::microseconds(rank == config->debug_delay_rank ? config->debug_delay_us : 0));
    std::unique_ptr<Pipeline> pipeline;
    agree(MPI_COMM_WORLD, [&] {
        pipeline = std::make_unique<Pipeline>(setup.spec, *setup.device, transport,
                                              setup.placement.role, MPI_COMM_WORLD);
    });

    const std::vector<bool> passes = passes_of(*config);
    Outputs outputs = open_outputs(mpi, setup, passes);
    // What runs where, said before the steps (and their progress lines) start.
    const RunSummary head = summarize(mpi, setup, *config, *pipeline, outputs, {});
    if (rank == 0 && !config->quiet) print_run_header(stdout, head);  // --quiet: errors only
    // A resumed run starts the count where the stopped one left it.
    const auto pass_count = static_cast<std::int64_t>(passes.size());
    Run run{
        mpi,
        setup,
        *pipeline,
        outputs,
        passes,
        resume,
        rank,
        Progress(rank == 0 && !config->quiet,
                 config->steps * pass_count * static_cast<std::int64_t>(config->size_list().size()),
                 (resume.size * pass_count + resume.pass) * config->steps + resume.step),
        StopVote(MPI_COMM_WORLD, config->timeout())};
    std::vector<RunSummary> sizes;
    const Stop stop = run_sizes(run, sizes);
    if (stop.signal != 0) return finish_stopped(setup, outputs, passes, stop, rank);
    return finish(setup, outputs, sizes, resume, stop.sizes_failed, rank);
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
