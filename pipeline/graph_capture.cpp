// Graphs: G = graph_steps steps as one graph over all the rank's streams, replayed.
//
// A graph holds G consecutive steps whose first is a multiple of G, so ring slot and tensor
// slot repeat from one graph to the next: one capture per ring position of a graph serves
// every launch there (R / G of them), in variants for what the timing needs (no end event, one,
// one per step, or every phase event). Every graph is launched on one stream, so each runs whole
// after the one before: a wait on a slot's previous reader in an earlier graph is implied, and
// the ordering events are edges inside the graph. What crosses its edge: the end events and the
// phase events (event nodes: the host reads them, the io stream waits on end), and y_free, waited
// on that stream before the launch.
//
// The kernels read their step as a word in device memory plus their offset in the cycle of R
// steps (StepArg): the word holds the cycle's first step, and the graph at the cycle's last ring
// position copies the next cycle's there, from where the host wrote it, after every kernel of
// the cycle has read it. So a step's graph holds no node for its step but once a cycle. (On an
// H200 at 4 KiB, bench_floor's graph step takes 8.9 us bare, and 11.0 us with a copy node for
// the step beside the step: a copy node costs a graph about 2 us wherever it sits, and a word
// the kernels read from pinned host memory costs 11.6 us.) The first graph after eager steps
// gets the word from an eager copy queued before it.
#include "pipeline/pipeline_impl.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {

using pipeline_detail::kRangeColours;
using pipeline_detail::now_ms;
using pipeline_detail::push_range;
using pipeline_detail::RangePhase;
using pipeline_detail::StepMarks;

// Where the host writes the cycle's first step for the device word: for the first graph after
// eager steps, or (`next`) for the cycle's last graph to copy at its end.
std::uint64_t* Pipeline::Impl::cycle_word_host(bool next) {
    return cycle_words_host.as<std::uint64_t>().data() + (next ? 1 : 0);
}

// Step s as a captured graph's kernels read it: the cycle's first step, plus s's place in the
// cycle.
StepArg Pipeline::Impl::graph_step(std::int64_t s) {
    return {cycle_word_device.as<std::uint64_t>().data(), static_cast<std::uint64_t>(s) % ring};
}

// The last of step s's work on `last`, the rank's last stream: in the graph of the cycle's last
// ring position, after its last step, the next cycle's first step into the device word (every
// kernel of this cycle that reads it comes before, in the graph and on this stream); then the
// step's end event, where it records one.
void Pipeline::Impl::end_step(std::int64_t s, Stream& last) {
    if (capturing && static_cast<std::size_t>(s) % ring == ring - 1) {
        device.copy_async(cycle_word_device.data(), cycle_word_host(true), sizeof(std::uint64_t),
                          last);
    }
    if (records_end(s)) marks[static_cast<std::size_t>(s) % ring].end->record(last);
}

// The streams a graph covers; it is captured from and launched on the first.
std::vector<Stream*> Pipeline::Impl::graph_streams(bool overlap) const {
    std::vector<Stream*> streams;
    if (producer) streams.push_back(producer_stream.get());
    if (consumer && overlap) streams.push_back(comm_stream.get());
    if (consumer) streams.push_back(compute_stream.get());
    return streams;
}

// Which captured graph serves the unit of steps from `first`: its ring position, and its
// variant.
std::size_t Pipeline::Impl::graph_index(std::int64_t first, UnitVariant variant) const {
    const auto g = static_cast<std::size_t>(config.graph_steps);
    return static_cast<std::size_t>(first) % ring / g * kUnitVariants +
           static_cast<std::size_t>(variant);
}

// The variant the unit of steps from `first` runs as: phased when its steps time their phases;
// stepwise when the writer copies out one of its steps (whose copy waits for that step's own end
// event); else lean when it ends its retire group (stepwise, with one step), silent when not.
Pipeline::Impl::UnitVariant Pipeline::Impl::unit_variant(std::int64_t first,
                                                         const ResultWriter* writer) const {
    if (unit_phased(first)) return UnitVariant::phased;
    if (needs_own_end(first, true, writer)) return UnitVariant::stepwise;
    if (!group_ends_after(first, true, writer)) return UnitVariant::silent;
    return config.graph_steps == 1 ? UnitVariant::stepwise : UnitVariant::lean;
}

// Whether step s of the phased unit from `first` records the phase events: every step with
// timing = phases; else only the unit's first. A phase-timed step costs a graph nine event nodes
// (on an H200 about 23-36 us a step at 4 KiB), so sampling one step a sampled graph keeps the
// cost of sampling per step as low as it is for eager steps.
bool Pipeline::Impl::phases_step(std::int64_t s, std::int64_t first) const {
    return config.timing == Timing::phases || s == first;
}

// Whether step s records its end event: an eager step when it ends its retire group (queue_step
// marked it); in a capture, by the graph's variant: every step, the unit's last (lean) or none
// (silent).
bool Pipeline::Impl::records_end(std::int64_t s) const {
    if (!capturing) return marks[static_cast<std::size_t>(s) % ring].covers != 0;
    switch (capture_variant) {
        case UnitVariant::silent:
            return false;
        case UnitVariant::lean:
            return s == capture_first + config.graph_steps - 1;
        default:
            return true;
    }
}

// Whether steps s to s + G - 1 run as one graph launch: after the cold step, the first a
// multiple of G, all within the pass and all on one side of the timed region's start.
bool Pipeline::Impl::graph_unit_at(std::int64_t s, std::int64_t first_step,
                                   std::int64_t timed_from) const {
    const std::int64_t g = config.graph_steps;
    if (!config.graphs || s <= first_step || s % g != 0 || s + g > config.steps) return false;
    return s >= timed_from || s + g <= timed_from;
}

// Whether the graph of the steps from `first` times their phases (all or none of them do).
// sampled:K samples every K-th graph, from the first timed one, so that graphs of G >= K
// steps are not all phase-timed; otherwise a graph is phase-timed when its steps would be.
bool Pipeline::Impl::unit_phased(std::int64_t first) const {
    const std::int64_t g = config.graph_steps;
    if (pass_timing == Timing::sampled && g > 1) {
        return first >= pass_timed_from && (first - pass_timed_from) / g % pass_timing_every == 0;
    }
    for (std::int64_t s = first; s < first + g; ++s) {
        if (phase_timed(s)) return true;
    }
    return false;
}

// Captures every graph the pass can launch (the variants its timing may use). Called while
// every stream is idle, after the cold step, so capture costs no step its timing.
template <typename T>
void Pipeline::Impl::capture_graphs(bool overlap, PassResult& result) {
    const NvtxRange range("capture step graphs", kRangeColours[8]);
    const double start = now_ms();
    const std::int64_t g = config.graph_steps;
    unit_graphs.clear();
    unit_graphs.resize(kUnitVariants * ring / static_cast<std::size_t>(g));
    const std::vector<Stream*> streams = graph_streams(overlap);
    Stream& origin = *streams.front();
    const std::vector<Stream*> joined(streams.begin() + 1, streams.end());
    // A unit is silent only inside a retire group of more than one unit.
    const bool grouped = pipeline_detail::retire_group_steps(config) > g;
    // Capturing sets the ring slots' phase flags; the steps queued before it (the cold step,
    // not retired yet) keep theirs.
    std::vector<bool> phases_before;
    for (const StepMarks& m : marks) phases_before.push_back(m.phases);
    for (std::int64_t first = 0; first < static_cast<std::int64_t>(ring); first += g) {
        for (const UnitVariant variant :
             {UnitVariant::silent, UnitVariant::lean, UnitVariant::stepwise, UnitVariant::phased}) {
            const bool phased = variant == UnitVariant::phased;
            if ((phased && config.timing == Timing::steps) ||
                (!phased && config.timing == Timing::phases) ||
                (variant == UnitVariant::lean && g == 1) ||
                (variant == UnitVariant::silent && !grouped)) {
                continue;
            }
            auto capture = device.begin_capture(origin, joined);
            capturing = true;
            capture_variant = variant;
            capture_first = first;
            for (std::int64_t s = first; s < first + g; ++s) {
                marks[static_cast<std::size_t>(s) % ring].phases = phased && phases_step(s, first);
                const StepArg step = graph_step(s);
                queue_exchange<T>(s, overlap, step);
                if (consumer) queue_compute<T>(s, overlap, step);
            }
            unit_graphs[graph_index(first, variant)] = capture->finish();
            capturing = false;
            ++result.graphs_captured;
        }
    }
    for (std::size_t r = 0; r < ring; ++r) marks[r].phases = phases_before[r];
    // An ordering event last recorded in a capture names a node of that graph, and an eager
    // wait on it is an error: record them again on an idle stream, for the eager steps
    // queued before the first graph or after the last.
    if (consumer) {
        for (std::size_t k = 0; k < depth; ++k) {
            recv_done[k]->record(*compute_stream);
            x_free[k]->record(*compute_stream);
        }
    }
    result.capture_ms += now_ms() - start;
}

// Steps s to s + G - 1 as one launch of their graph, then their writes (eager, on the io
// stream). `entering`: the first graph after eager steps, with every stream idle.
void Pipeline::Impl::launch_unit(std::int64_t s, bool overlap, bool entering, ResultWriter* writer,
                                 std::uint64_t& next_row, PassResult& result) {
    const std::int64_t g = config.graph_steps;
    const UnitVariant variant = unit_variant(s, writer);
    const bool phased = variant == UnitVariant::phased;
    Stream& stream = launch_stream(overlap);
    if (entering) {
        // No graph before this one set the cycle's first step.
        *cycle_word_host(false) =
            static_cast<std::uint64_t>(s) - static_cast<std::uint64_t>(s) % ring;
        device.copy_async(cycle_word_device.data(), cycle_word_host(false), sizeof(std::uint64_t),
                          stream);
    }
    // The cycle's last graph copies the next cycle's first step. Safe to overwrite: that
    // graph's copy R steps before has run, since a later end event on the same stream has been
    // retired (pass_loop.cpp retires up to s + G - 1 - R + C).
    if ((s + g) % static_cast<std::int64_t>(ring) == 0) {
        *cycle_word_host(true) = static_cast<std::uint64_t>(s + g);
    }
    mark_ends(s, g, variant == UnitVariant::stepwise || variant == UnitVariant::phased,
              variant == UnitVariant::lean);
    for (std::int64_t j = s; j < s + g; ++j) {
        StepMarks& m = marks[static_cast<std::size_t>(j) % ring];
        m.phases = phased && phases_step(j, s);
        const std::size_t k = static_cast<std::size_t>(j) % depth;
        if (consumer && y_pending[k]) stream.wait(*y_free[k]);  // B must not overwrite y yet
        if (consumer) y_pending[k] = false;
    }
    if constexpr (nvtx::kBuilt) push_range({s, RangePhase::graph, s < config.warmup});
    unit_graphs[graph_index(s, variant)]->launch(stream);
    if constexpr (nvtx::kBuilt) nvtx::pop();
    result.graph_steps += g;
    for (std::int64_t j = s; j < s + g; ++j) queue_write(j, writer, next_row);
}

// For pass_loop.cpp's run, for both element types (with_dtype's).
template void Pipeline::Impl::capture_graphs<float>(bool, PassResult&);
template void Pipeline::Impl::capture_graphs<double>(bool, PassResult&);

}  // namespace gpurelay
