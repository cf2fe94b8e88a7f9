// Inside pipeline/: the state of one Pipeline (its buffers, streams, events and graphs) and
// the functions that work on it, defined by concern: step_schedule.cpp (one step on its
// streams), step_timer.cpp (the ring of timing events), graph_capture.cpp (steps as CUDA
// graphs) and pass_loop.cpp (a pass, step after step).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {
namespace pipeline_detail {

// The events that time one step. The host reads step s's times R-1 steps later, from a ring of
// R sets, so it never waits on work it has just queued and host memory does not grow with steps.
struct StepMarks {
    // Recorded only by the steps that time their phases (see Impl::phase_timed).
    // producer stream; send_start after what the send waits for (Transport::queue_send_wait)
    std::unique_ptr<Event> a_start, a_end, send_start, send_end;
    std::unique_ptr<Event> recv_start, recv_end;            // comm stream
    std::unique_ptr<Event> c_start, c_end, b_start, b_end;  // compute stream
    // Recorded last on the rank's last stream (the compute stream on a consumer, the producer
    // stream otherwise) by the steps that end a retire group (step_timer.cpp): the host retires
    // the group's steps on it, and their period is the time from the previous group's end over
    // the group's steps.
    std::unique_ptr<Event> end;
    bool phases = false;  // whether the step in this slot recorded the phase events
    // The steps that end with this step's end event (its group, back to the step after the
    // previous end): 1 for a step that times its phases or is written; 0 for a step whose group
    // ends later.
    std::int64_t covers = 1;
    // Whether `end` was recorded after the fact, when a stop cut the group short: it marks when
    // the host stopped, not when the steps ran, so they get no period.
    bool late = false;
};

// The NVTX ranges of a step, one colour each so a timeline reads at a glance.
enum class RangePhase : std::uint8_t { a, send, recv, c, wait, b, verify, write, graph };
constexpr const char* kRangeNames[] = {"A", "send",   "recv",  "C",    "wait",
                                       "B", "verify", "write", "graph"};
constexpr std::uint32_t kRangeColours[] = {
    0xff4e79a7,  // A: blue
    0xfff28e2b,  // send: orange
    0xffe15759,  // recv: red
    0xff76b7b2,  // C: teal
    0xffbab0ac,  // wait: grey
    0xff59a14f,  // B: green
    0xffb07aa1,  // verify: purple
    0xffedc948,  // write: yellow
    0xffff9da7,  // graph: pink
};
constexpr std::uint32_t kPassColour = 0xff9c755f;  // brown

// One range to open: small and trivially copyable, so a queued lambda holding it fits in
// std::function's inline storage and queueing it does not allocate.
struct StepRange {
    std::int64_t step;
    RangePhase phase;
    bool warmup;
};

// Opens `range` on the calling thread, named by its phase ("B"), the step in its payload.
inline void push_range(const StepRange& range) {
    const auto phase = static_cast<std::size_t>(range.phase);
    nvtx::push_step(kRangeNames[phase], kRangeColours[phase], range.step, range.warmup);
}

inline double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The most steps one end event retires: kRetireGroupSteps, or with graphs the least multiple of
// graph_steps that holds as many (step_timer.cpp).
std::int64_t retire_group_steps(const Config& cfg);

// Ring slots of timing events and host counters (step_timer.cpp says why so many).
std::size_t timing_ring_size(const Config& cfg);

}  // namespace pipeline_detail

struct Pipeline::Impl {
    Impl(const Config& cfg, Device& dev, Transport& tr, const PairPlacement& place, MPI_Comm c);

    // The schedule of one step (step_schedule.cpp): A and the send, the receive, C, B and
    // the checks, the write of y, each on its stream, ordered by events.
    std::string stream_label(const char* what) const;
    void poison_slots();
    void synchronize_all();
    void begin_range(pipeline_detail::RangePhase phase, std::int64_t step, Stream& stream);
    void end_range(Stream& stream);
    template <typename T>
    void queue_step(std::int64_t s, bool overlap, ResultWriter* writer, std::uint64_t& next_row);
    template <typename T>
    void queue_exchange(std::int64_t s, bool overlap, StepArg step);
    template <typename T>
    void queue_compute(std::int64_t s, bool overlap, StepArg step);
    void queue_write(std::int64_t s, ResultWriter* writer, std::uint64_t& next_row);

    // Whether the consumer receives on its compute stream after C, with overlap: when the
    // transport's receive only waits for the producer's copy (Transport::receive_only_waits),
    // there is nothing to run beside C, and a comm stream would add only a stream and two
    // event hops a step (which, with two processes time-sliced on one GPU, cost most of a
    // millisecond a step).
    bool receive_after_c(bool overlap) const { return overlap && transport.receive_only_waits(); }
    // Whether phase-timed steps time the receive (recv_start, recv_end): not one that only waits
    // for the producer's copy, whose time is waiting, not a transfer.
    bool times_receive() const { return !transport.receive_only_waits(); }
    // The consumer's stream for receiving: its own with overlap, so C runs beside it, else the
    // compute stream, so that C and B wait for the receive in stream order (and the compute
    // stream, after C, for a receive that only waits).
    Stream& receive_stream(bool overlap) {
        return overlap && !receive_after_c(overlap) ? *comm_stream : *compute_stream;
    }

    // The step timer (step_timer.cpp): which steps record the phase events, and reading a
    // step's times and counts back from its ring slot.
    bool phase_timed(std::int64_t s) const;
    bool needs_own_end(std::int64_t s, bool unit, const ResultWriter* writer) const;
    bool unit_ends(std::int64_t s, bool unit, const ResultWriter* writer) const;
    bool group_ends_after(std::int64_t s, bool unit, const ResultWriter* writer) const;
    void mark_ends(std::int64_t s, std::int64_t n, bool each, bool last);
    void end_late(std::int64_t last, Stream& stream);
    void retire(std::int64_t s, PassResult& result);
    void read_counts(std::int64_t j, PassResult& result);
    void decide_timing(double warm_ms, PassResult& result);

    // Graphs (graph_capture.cpp): G = graph_steps steps as one graph over all the rank's
    // streams, captured once per ring position and replayed, in up to four variants: silent (no
    // end event: its retire group ends in a later graph), lean (G > 1: one end event, for the
    // unit), stepwise (an end event per step) and phased (every event of every step).
    enum class UnitVariant : std::uint8_t { silent, lean, stepwise, phased };
    static constexpr std::size_t kUnitVariants = 4;
    StepArg graph_step(std::int64_t s);
    std::uint64_t* cycle_word_host(bool next);
    void end_step(std::int64_t s, Stream& last);
    std::vector<Stream*> graph_streams(bool overlap) const;
    Stream& launch_stream(bool overlap) const { return *graph_streams(overlap).front(); }
    std::size_t graph_index(std::int64_t first, UnitVariant variant) const;
    UnitVariant unit_variant(std::int64_t first, const ResultWriter* writer) const;
    bool records_end(std::int64_t s) const;
    bool phases_step(std::int64_t s, std::int64_t first) const;
    bool graph_unit_at(std::int64_t s, std::int64_t first_step, std::int64_t timed_from) const;
    bool unit_phased(std::int64_t first) const;
    template <typename T>
    void capture_graphs(bool overlap, PassResult& result);
    void launch_unit(std::int64_t s, bool overlap, bool entering, ResultWriter* writer,
                     std::uint64_t& next_row, PassResult& result);

    // The pass loop (pass_loop.cpp).
    template <typename T>
    void spot_check_last(PassResult& result);
    template <typename T>
    PassResult run(bool overlap, ResultWriter* writer, const StepCallback& on_step,
                   std::int64_t first_step);

    const Config& config;
    Device& device;
    Transport& transport;
    PairPlacement placement;
    MPI_Comm mpi_comm;  // the ranks that run the pipeline together: they meet at its barriers
    bool producer;
    bool consumer;
    bool collective;            // broadcast or allreduce: one collective a step over the group
    TensorForm a_form, b_form;  // what A makes here, and what B checks the received x against
    std::size_t bytes;
    std::size_t depth;
    std::size_t ring;
    std::vector<Buffer> send_slots, recv_buffers, y_slots;
    std::vector<void*> recv_slots;  // receive slot k: the transport's, or recv_buffers[k]
    Buffer c_buffer, counters_host;
    // Per tensor slot: whether the io stream is copying y out, so B of the slot's next step
    // must wait for that (y_free) first.
    std::vector<bool> y_pending;
    // The timing this pass uses (auto: phases until decide_timing), and K when sampled.
    Timing pass_timing = Timing::phases;
    std::int64_t pass_timing_every = 0;
    std::int64_t pass_first_step = 0;
    std::int64_t pass_timed_from = 0;
    std::int64_t last_end = 0;  // the last step queued that records its end event
    // After the buffers: destroyed first, so no stream's queued work outlives what it uses.
    std::unique_ptr<Stream> producer_stream, comm_stream, compute_stream, io_stream;
    std::vector<std::unique_ptr<Event>> recv_done, x_free, y_free;
    std::vector<pipeline_detail::StepMarks> marks;
    // Graphs only: the first step of the current cycle of R steps, which the kernels of a graph
    // read (plus their offset in the cycle, StepArg), on the device; and on the host, where
    // the first graph after eager steps ([0]) and the cycle's last graph ([1]) copy it from.
    Buffer cycle_words_host, cycle_word_device;
    MemoryPlan plan;
    bool capturing = false;
    std::int64_t capture_first = 0;  // while capturing: the first step of the graph
    UnitVariant capture_variant = UnitVariant::stepwise;  // while capturing: the graph's
    // Last: destroyed first, before the events and buffers their nodes name. See graph_index.
    std::vector<std::unique_ptr<Graph>> unit_graphs;
};

}  // namespace gpurelay
