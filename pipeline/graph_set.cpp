// Graphs. A graph holds G consecutive steps from a multiple of G, so ring and tensor slots repeat
// from one graph to the next: one capture per ring position (R / G of them) serves every launch
// there, timed and untimed (step_timer.cpp). All are launched on one stream, each whole after the
// one before, so a wait on a slot's reader in an earlier graph is implied, and the ordering events
// inside are the graph's edges (the transport is told the streams are idle before each capture).
// Crossing an edge: the timing events and y_free, waited on the launch stream before the launch.
//
// Cycle words: a kernel reads its step as a word in device memory (the first step of the cycle
// of R) plus its offset (StepArg); only the graph at the cycle's last ring position copies the
// next cycle's word there, after every kernel of the cycle has read it: a copy node costs a small
// step's graph a fair share of its time, and a word read from pinned host memory costs more.
#include "pipeline/graph_set.hpp"

#include "runtime/nvtx.hpp"

namespace gpurelay {
GraphSet::GraphSet(const PipelineSpec& spec, Device& device, std::size_t ring)
    : spec_(spec), device_(device), ring_(ring) {
    if (!spec.graphs) return;
    host_words_ = device.allocate_host(2 * sizeof(std::uint64_t));
    device_word_ = device.allocate(2 * sizeof(std::uint64_t));
}

std::uint64_t* GraphSet::host_word(bool next) const {
    return host_words_.as<std::uint64_t>().data() + (next ? 1 : 0);
}

StepArg GraphSet::step_arg(std::int64_t s) const {
    return {device_word_.as<std::uint64_t>().data(), static_cast<std::uint64_t>(s) % ring_};
}

std::size_t GraphSet::index(std::int64_t first, bool timed) const {
    const auto g = static_cast<std::size_t>(spec_.graph_steps);
    return static_cast<std::size_t>(first) % ring_ / g * 2 + (timed ? 1 : 0);
}

void GraphSet::capture(StepSchedule& schedule, StepTimer& timer, Transport& transport,
                       PassResult& result) {
    const NvtxRange range("capture step graphs", info(Phase::graph).colour);
    const double start = now_ms();
    const std::int64_t g = spec_.graph_steps;
    const PassPlan& plan = schedule.plan();
    const std::vector<Stream*> joined(plan.graph_streams.begin() + 1, plan.graph_streams.end());
    graphs_.clear();
    graphs_.resize(2 * ring_ / static_cast<std::size_t>(g));
    for (std::int64_t first = 0; first < static_cast<std::int64_t>(ring_); first += g) {
        for (const bool timed : {false, true}) {
            if (spec_.timing == (timed ? Timing::steps : Timing::phases)) continue;
            transport.streams_idle();
            auto capture = device_.begin_capture(*plan.graph_streams.front(), joined);
            schedule.set_capturing(true);
            timer.begin_capture(first, timed);
            with_dtype(spec_.dtype, [&]<typename T>() {
                for (std::int64_t s = first; s < first + g; ++s) schedule.step<T>(s, step_arg(s));
            });
            if (first + g == static_cast<std::int64_t>(ring_)) {
                // The next cycle's first step, after every kernel of this one on the last stream.
                device_.copy_async(device_word_.data(), host_word(true), sizeof(std::uint64_t),
                                   *plan.last);
            }
            graphs_[index(first, timed)] = capture->finish();
            timer.end_capture();
            schedule.set_capturing(false);
            ++result.graphs_captured;
        }
    }
    transport.streams_idle();
    result.capture_ms += now_ms() - start;
}

void GraphSet::launch(std::int64_t s, bool entering, StepSchedule& schedule, StepTimer& timer,
                      std::uint64_t& next_row, PassResult& result) {
    const std::int64_t g = spec_.graph_steps;
    const bool timed = timer.unit_timed(s);
    Stream& stream = launch_stream(schedule.plan());
    if (entering) {
        // No graph before this one set the cycle's first step.
        *host_word(false) = static_cast<std::uint64_t>(s) - static_cast<std::uint64_t>(s) % ring_;
        device_.copy_async(device_word_.data(), host_word(false), sizeof(std::uint64_t), stream);
    }
    // The cycle's last graph copies the next cycle's first step. Safe to overwrite: that graph's
    // copy R steps before has run, since a later end event on the same stream has been retired
    // (StepTimer::last_to_retire_before).
    if ((s + g) % static_cast<std::int64_t>(ring_) == 0) {
        *host_word(true) = static_cast<std::uint64_t>(s + g);
    }
    timer.begin_unit(s, timed);
    for (std::int64_t j = s; j < s + g; ++j) schedule.wait_y_free(j, stream);
    if constexpr (nvtx::kBuilt) {
        nvtx::push_step(info(Phase::graph).range, info(Phase::graph).colour, s, s < spec_.warmup);
    }
    graphs_[index(s, timed)]->launch(stream);
    if constexpr (nvtx::kBuilt) nvtx::pop();
    timer.end_unit(s, stream);
    result.graph_steps += g;
    for (std::int64_t j = s; j < s + g; ++j) schedule.write_step(j, next_row);
}

}  // namespace gpurelay
