#include "app/passes.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "app/provenance.hpp"
#include "io/result_schema.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/placement.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

// One size of the run: the run as it is for that size alone, and where its datasets lie.
struct SizeCase {
    std::size_t index = 0;
    Config config;      // elements = this size, and no other sizes
    std::string group;  // "" for a run of one size (today's layout); "/cases/i" for several
};

// Pass `pass` of the size the pipeline is set to, from `first_step`; `stop` gets the signal
// every rank agreed to stop on.
PassResult run_pass(Run& run, std::size_t pass, std::int64_t first_step, bool calibrate,
                    Stop& stop) {
    const Config& config = run.setup.config;
    // This launch's pass number: the deadline (duration) it ends by.
    const std::int64_t deadline = run.passes_begun++;
    // Every rank passes the same step boundaries, so the collective flush lines up.
    auto on_step = [&](std::int64_t s) {
        run.watch.at_step(std::min(s + 1, config.steps - 1));
        run.progress.step_done();
        if (config.flush_every > 0 && (s + 1) % config.flush_every == 0) {
            run.outputs.flush(config, run.rank, ++run.flushes);
        }
        // A stop after a pass's last step would leave nothing in it to resume: that pass ends as
        // usual, and the next (if any) stops after its first step.
        const int vote = run.stop_vote.after_step();
        if (s + 1 >= config.steps) return AfterStep::go;
        if (vote != 0) {
            stop.signal = vote;
            return AfterStep::stop;
        }
        // The pass's share of the duration is up on some rank's clock: it ends here, once it has
        // a timed step.
        if (run.stop_vote.deadlines_passed() > deadline &&
            s >= std::max(config.warmup, first_step + 1)) {
            run.progress.pass_ended();
            return AfterStep::end;
        }
        return AfterStep::go;
    };
    run.watch.start_pass(run.passes[pass], first_step);
    try {
        // Only the last pass writes /y: the overlap-off pass stays free of file I/O, and the
        // report says when the writer held up the other.
        const bool last = pass + 1 == run.passes.size();
        return run.pipeline.run(run.passes[pass], last ? run.outputs.sink.get() : nullptr, on_step,
                                first_step, calibrate);
    } catch (...) {
        // Streams, proxies and the writer may still be using the pipeline's buffers: end the job
        // here, before unwinding frees them under running threads.
        fail_fatally(std::current_exception());
    }
}

// One size's passes from where a resumed run stopped, each filed and summarised.
Stop run_passes(Run& run, const SizeCase& size, std::vector<PassSummary>& summaries) {
    const bool resumed_size = static_cast<std::int64_t>(size.index) == run.resume.size;
    const std::size_t first_pass = resumed_size ? static_cast<std::size_t>(run.resume.pass) : 0;
    Stop stop;
    for (std::size_t i = first_pass; i < run.passes.size(); ++i) {
        const std::int64_t first_step = resumed_size && i == first_pass ? run.resume.step : 0;
        // Each size's ceilings are measured once, in the first of its passes this launch runs.
        const bool calibrate = run.setup.config.calibrate && i == first_pass;
        const PassResult result = run_pass(run, i, first_step, calibrate, stop);
        // A pass that ran every step leaves nothing to resume: the next stops after its first.
        if (result.complete) stop.signal = 0;
        run.outputs.file_pass(run.setup, size.group, run.passes[i], result, run.rank);
        if (stop.signal != 0) {
            return {stop.signal, static_cast<std::int64_t>(size.index),
                    static_cast<std::int64_t>(i), result.end_step};
        }
        // The last pass ended by its duration wrote its last step where write = "last" writes.
        const bool last = i + 1 == run.passes.size();
        if (last && result.end_step < size.config.steps && size.config.write == WriteMode::last &&
            run.rank == 0) {
            run.outputs.file->write_row_step(run.setup.config.several_sizes() ? size.index : 0, 0,
                                             result.end_step - 1);
        }
        summaries.push_back(
            summarize_pass(MPI_COMM_WORLD, size.config, run.setup.placement, result));
        run.outputs.file_histograms(size.group, summaries.back(), run.rank);
    }
    return stop;
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

// This rank's own figures for the run's summary: where it runs, what it holds and wrote.
RankFigures rank_figures(const MpiSession& mpi, const Setup& setup, const Outputs& outputs) {
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
                 HostStream::live_count() + 1};  // the main thread and each host stream
    mine.device_bytes = setup.memory.device_bytes();
    mine.host_bytes =
        setup.memory.host_bytes() + (writer ? kWriterBuffers * setup.spec.tensor_bytes() : 0);
    mine.bytes_written = writer ? static_cast<double>(writer->bytes_written()) : 0.0;
    mine.write_seconds = writer ? writer->write_seconds() : 0.0;
    return mine;
}

}  // namespace

std::vector<bool> passes_of(const Config& config) {
    if (config.overlap == OverlapMode::compare) return {false, true};
    return {config.overlap == OverlapMode::on};
}

Stop run_sizes(Run& run, std::vector<RunSummary>& done) {
    const Config& config = run.setup.config;
    std::int64_t sizes_failed = run.resume.sizes_failed;
    const std::vector<std::uint64_t> sizes = config.size_list();
    // From the size a resumed run stopped in.
    for (auto i = static_cast<std::size_t>(run.resume.size); i < sizes.size(); ++i) {
        const SizeCase size{i, config.sized(sizes[i]),
                            config.several_sizes() ? ResultSchema::case_group(i) : std::string()};
        run.pipeline.resize(size.config.elements);
        run.outputs.start_size(size.index, size.config, run.setup.placement);
        std::vector<PassSummary> passes;
        Stop stop = run_passes(run, size, passes);
        if (stop.signal != 0) {
            stop.sizes_failed = sizes_failed;
            return stop;
        }
        done.push_back(summarize(run.mpi, run.setup, size.config, run.pipeline, run.outputs,
                                 std::move(passes)));
        if (!done.back().verified()) ++sizes_failed;
        if (config.several_sizes()) {
            run.outputs.file_size(size.index, size.group, done.back(), sizes_failed);
        }
    }
    return {.sizes_failed = sizes_failed};
}

RunSummary summarize(const MpiSession& mpi, const Setup& setup, const Config& config,
                     const Pipeline& pipeline, const Outputs& outputs,
                     std::vector<PassSummary> passes) {
    RunSummary summary;
    summary.config = config;
    summary.backend = setup.device->backend() == Backend::cuda ? "cuda" : "cpu";
    summary.transport = setup.transport->name();
    summary.transport_note = setup.transport_note;
    const HostWaitChoice waits = host_wait();
    summary.host_wait = to_string(waits.wait);
    summary.host_wait_reason = waits.reason;
    summary.world_size = mpi.world_size();
    summary.pairs = setup.placement.pairs;
    if (config.pattern != Pattern::pairs) {
        summary.groups = setup.placement.groups;
        summary.group_size = setup.placement.group_size;
    }
    summary.passes = std::move(passes);
    summary.ceilings =
        summarize_ceilings(MPI_COMM_WORLD, config, setup.placement, pipeline.ceilings());
    summarize_run(MPI_COMM_WORLD, rank_figures(mpi, setup, outputs), summary);
    summary.output_bytes = setup.output_bytes;
    summary.versions = versions_line();
    summary.timestamp = utc_timestamp();
    summary.git_hash = git_hash();
    return summary;
}

}  // namespace gpurelay
