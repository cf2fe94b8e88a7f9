// The pass loop: the steps of one pass queued one after another (or G at a time as graphs),
// retired by retire group about depth + 1 steps later, between barriers that start and end the
// timed region; and the Pipeline class itself, whose run() is one pass.
#include <algorithm>
#include <limits>

#include "comm/mpi_error.hpp"
#include "pipeline/pipeline_impl.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {
namespace {

// Spot-check samples taken on the host from the last tensor of a pass.
constexpr std::uint64_t kSpotSamples = 4096;

}  // namespace

using pipeline_detail::kPassColour;
using pipeline_detail::now_ms;

template <typename T>
void Pipeline::Impl::spot_check_last(PassResult& result) {
    const std::int64_t last = result.end_step - 1;
    const std::size_t k = static_cast<std::size_t>(last) % depth;
    Buffer host = device.allocate_host(bytes);
    device.copy_async(host.data(), y_slots[k].data(), bytes, *compute_stream);
    compute_stream->synchronize();
    result.spot_checked += std::min<std::uint64_t>(kSpotSamples, config.elements);
    result.spot_mismatches +=
        spot_check_y(Span<const T>(host.as<T>()), static_cast<T>(config.alpha),
                     static_cast<std::uint64_t>(last), config.seed, kSpotSamples, b_form);
}

template <typename T>
PassResult Pipeline::Impl::run(bool overlap, ResultWriter* writer, const StepCallback& on_step,
                               std::int64_t first_step) {
    // The whole pass on the main thread's row, so passes of a compare run are easy to tell
    // apart.
    const NvtxRange pass_range(overlap ? "pass overlap=on" : "pass overlap=off", kPassColour);
    PassResult result;
    result.overlap = overlap;
    result.first_step = first_step;
    // The first step a pass runs is cold (new connections), so a resumed pass times from
    // the step after it.
    result.timed_from = std::max(config.warmup, first_step == 0 ? 0 : first_step + 1);
    const auto steps = static_cast<std::size_t>(config.steps);
    result.steps.assign(steps, StepTimes{});
    result.x_mismatches.assign(steps, 0);
    result.c_mismatches.assign(steps, 0);
    std::uint64_t next_row = 0;
    for (std::int64_t s = 0; s < first_step; ++s) next_row += config.writes_step(s) ? 1 : 0;
    struct {
        double waited_ms;
        std::uint64_t checked, mismatches;
    } const writer_before = {writer ? writer->waited_ms() : 0.0, writer ? writer->checked() : 0,
                             writer ? writer->mismatches() : 0};
    double timed_start = now_ms();
    pass_timing = config.timing == Timing::auto_select ? Timing::phases : config.timing;
    pass_timing_every = config.timing_every;
    pass_first_step = first_step;
    pass_timed_from = result.timed_from;
    last_end = first_step - 1;
    result.retire_group_steps = pipeline_detail::retire_group_steps(config);
    // When the warm-up steps (those after the cold one) started, for timing = auto.
    double warm_start = now_ms();
    const auto ring_steps = static_cast<std::int64_t>(ring);
    const std::int64_t group_steps = result.retire_group_steps;
    std::int64_t retired = first_step;  // the next step to retire
    bool in_graphs = false;             // whether the last steps queued were a graph

    MPI_CHECK(MPI_Barrier(mpi_comm));
    std::int64_t end = config.steps;
    // Each turn queues one step, or G steps as one graph launch.
    for (std::int64_t s = first_step; s < config.steps;) {
        const bool unit = graph_unit_at(s, first_step, result.timed_from);
        const std::int64_t n = unit ? config.graph_steps : 1;
        const bool timed = s >= result.timed_from;
        const bool entering = unit && !in_graphs;  // the first graph after eager steps
        const double retire_start = now_ms();
        // Before the n steps from s: every step up to s + n - 1 - R + C, so that the ring slots
        // these steps record into hold no step that is still to be read, nor the end event that
        // a retire group still to be read is read against, up to C steps before the group's end
        // (step_timer.cpp).
        for (; retired <= s + n - 1 - ring_steps + group_steps; ++retired) retire(retired, result);
        if (unit != in_graphs) {
            // Between eager steps and graphs every stream is idle: NCCL's graph mixing is off
            // (no eager NCCL call while a graph runs), and a graph assumes the steps before
            // it have finished.
            synchronize_all();
            in_graphs = unit;
        }
        if (timed) result.host_retire_ms += now_ms() - retire_start;
        if (s == result.timed_from) {
            // The timed region starts with every rank idle and in step (decide_timing's
            // reduction is the barrier then).
            synchronize_all();
            if (config.timing == Timing::auto_select) {
                const std::int64_t warm_steps = s - first_step - 1;
                decide_timing(warm_steps > 0
                                  ? (now_ms() - warm_start) / static_cast<double>(warm_steps)
                                  : std::numeric_limits<double>::infinity(),
                              result);
            } else {
                MPI_CHECK(MPI_Barrier(mpi_comm));
            }
            timed_start = now_ms();
        }
        const auto covers = [&](std::int64_t step) { return s <= step && step < s + n; };
        if (covers(config.profile_first)) profiler_start(device.backend());
        const double queued_at = now_ms();
        if (unit) {
            launch_unit(s, overlap, entering, writer, next_row, result);
        } else {
            queue_step<T>(s, overlap, writer, next_row);
        }
        if (timed) result.host_queue_ms += now_ms() - queued_at;
        if (config.blocking) {
            // The blocking style: the host waits for this step's send and receive.
            if (unit) launch_stream(overlap).synchronize();
            if (!unit && producer) producer_stream->synchronize();
            if (!unit && consumer) receive_stream(overlap).synchronize();
        }
        if (covers(config.profile_last)) {
            // The capture ends once the last profiled step has run, not when it was queued.
            synchronize_all();
            profiler_stop(device.backend());
        }
        if (s == first_step) {
            // The cold step: the first transfer between two peers sets up its connections.
            synchronize_all();
            result.cold_step_ms = now_ms() - queued_at;
            // Captured now, with the connections made and before the timed steps start.
            if (config.graphs) capture_graphs<T>(overlap, result);
            warm_start = now_ms();
        }
        // Every step of a graph has run when it stops, so a stop ends the pass after it.
        bool stop = false;
        const double callback_start = now_ms();
        for (std::int64_t j = s; j < s + n && !stop; ++j) stop = on_step && on_step(j);
        if (timed) result.host_callback_ms += now_ms() - callback_start;
        s += n;
        if (stop) {
            end = s;
            end_late(end - 1, unit       ? launch_stream(overlap)
                              : consumer ? *compute_stream
                                         : *producer_stream);
            break;
        }
    }
    result.end_step = end;
    for (; retired < end; ++retired) retire(retired, result);
    // The timed steps are over once the last one has ended. The copy of its y to the host, which
    // the io stream may still be making, is the writer's (write_wait_ms, write_gbps): counted
    // here, it would make the pass that writes look slower by a whole tensor's copy.
    const double steps_done = now_ms();
    synchronize_all();
    MPI_CHECK(MPI_Barrier(mpi_comm));
    result.timed_wall_ms = end > result.timed_from ? steps_done - timed_start : 0.0;
    if (writer != nullptr) {
        // The writer lives across passes: this pass's share is the difference.
        writer->drain();
        result.write_wait_ms = writer->waited_ms() - writer_before.waited_ms;
        result.spot_checked += writer->checked() - writer_before.checked;
        result.spot_mismatches += writer->mismatches() - writer_before.mismatches;
    }
    if (consumer) spot_check_last<T>(result);
    result.timing = pass_timing;
    result.timing_every = pass_timing == Timing::sampled ? pass_timing_every : 0;
    return result;
}

Pipeline::Pipeline(const Config& config, Device& device, Transport& transport,
                   const PairPlacement& placement, MPI_Comm comm)
    : impl_(std::make_unique<Impl>(config, device, transport, placement, comm)) {}

Pipeline::~Pipeline() = default;

PassResult Pipeline::run(bool overlap, ResultWriter* writer, const StepCallback& on_step,
                         std::int64_t first_step) {
    return with_dtype(impl_->config.dtype, [&]<typename T>() {
        return impl_->run<T>(overlap, writer, on_step, first_step);
    });
}

std::uint64_t Pipeline::device_bytes() const { return impl_->plan.device_bytes(); }

std::uint64_t Pipeline::host_bytes() const { return impl_->plan.host_bytes(); }

}  // namespace gpurelay
