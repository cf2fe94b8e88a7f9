#include "pipeline/pipeline.hpp"

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "comm/mpi_error.hpp"
#include "runtime/error.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Spot-check samples taken on the host from the last tensor of a pass.
constexpr std::uint64_t kSpotSamples = 4096;

// The events that time one step. The host reads step s's times R-1 steps later, from a ring of
// R sets, so it never waits on work it has just queued and host memory does not grow with steps.
struct StepMarks {
    // Recorded only by the steps that time their phases (see Impl::phase_timed).
    std::unique_ptr<Event> a_start, a_end, send_end;        // producer stream
    std::unique_ptr<Event> recv_start, recv_end;            // comm stream
    std::unique_ptr<Event> c_start, c_end, b_start, b_end;  // compute stream
    // Recorded by every step, last on the rank's last stream (the compute stream on a consumer,
    // the producer stream otherwise): the host retires the step on it, and the step's period is
    // the time from the previous step's.
    std::unique_ptr<Event> end;
    bool phases = false;  // whether the step in this slot recorded the phase events
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
void push_range(const StepRange& range) {
    const auto phase = static_cast<std::size_t>(range.phase);
    nvtx::push_step(kRangeNames[phase], kRangeColours[phase], range.step, range.warmup);
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Ring slots of timing events, host counters and step words: the host reads a step's times
// R-1 steps later, so R >= depth + 2. With graphs R is also a multiple of depth, so that a
// ring slot fixes the tensor slot too and one graph per ring slot serves every step (one per
// distinct pair of slots would be lcm(depth, depth + 2) graphs: 2112 at depth 64). With G =
// graph_steps > 1 (a multiple of depth) R is a multiple of G, at least 2G, so a graph of G
// steps is launched while the one before it still runs.
//
// Graphs also hold at least kGraphRingSteps: the host queues a graph step faster than the
// GPU runs it, so it waits when it retires, and a wait that sleeps lasts at least the timer
// slack (~50 µs). With only depth + 2 steps ahead the GPU could run dry during that sleep (on an
// H200, 4 KiB graph steps: 14 µs of the host's 22 µs a step went to waiting).
std::size_t timing_ring_size(const Config& cfg) {
    constexpr std::size_t kGraphRingSteps = 16;
    const auto d = static_cast<std::size_t>(cfg.depth);
    const auto g = static_cast<std::size_t>(cfg.graph_steps);
    if (!cfg.graphs) return d + 2;
    const std::size_t least = std::max(d + 2, kGraphRingSteps);
    if (g == 1) return (least + d - 1) / d * d;  // the least multiple of d >= that
    return g * std::max<std::size_t>(2, (least + g - 1) / g);
}

}  // namespace

MemoryPlan plan_memory(const Config& config, Role role) {
    const bool producer = role != Role::consumer;
    const bool consumer = role != Role::producer;
    const auto depth = static_cast<std::uint64_t>(config.depth);
    const auto ring = static_cast<std::uint64_t>(timing_ring_size(config));
    MemoryPlan plan;
    plan.slot_bytes = config.tensor_bytes();
    plan.slots = (producer ? depth : 0) + (consumer ? 2 * depth : 0);
    if (consumer) {
        plan.c_bytes = config.c_elements * sizeof(std::uint32_t);
        plan.counter_host_bytes = ring * 2 * sizeof(Counter);
    }
    if (config.graphs) plan.step_word_bytes = ring * sizeof(std::uint64_t);
    return plan;
}

struct Pipeline::Impl {
    Impl(const Config& cfg, Device& dev, Transport& tr, const PairPlacement& place, MPI_Comm c)
        : config(cfg),
          device(dev),
          transport(tr),
          placement(place),
          mpi_comm(c),
          producer(place.role != Role::consumer),
          consumer(place.role != Role::producer),
          bytes(cfg.tensor_bytes()),
          depth(static_cast<std::size_t>(cfg.depth)),
          ring(timing_ring_size(cfg)),
          plan(plan_memory(cfg, place.role)) {
        if (cfg.graphs) {
            step_words_host = device.allocate_host(plan.step_word_bytes);
            step_words_device = device.allocate(plan.step_word_bytes);
            graph_fork = device.make_event(EventUse::ordering);
        }
        if (producer) {
            producer_stream = device.make_stream(false, stream_label("producer stream"));
            for (std::size_t k = 0; k < depth; ++k) send_slots.push_back(device.allocate(bytes));
        }
        if (consumer) {
            // The comm stream gets the higher priority: the compute stream's B waits on it, and
            // C must not delay the transfer it is meant to hide.
            comm_stream = device.make_stream(true, stream_label("comm stream"));
            compute_stream = device.make_stream(false, stream_label("compute stream"));
            io_stream = device.make_stream(false, stream_label("io stream"));
            for (std::size_t k = 0; k < depth; ++k) {
                // Where the tensors land: the transport's slots when it places them (ipc), else
                // our own.
                void* slot = transport.receive_slot(k);
                if (slot == nullptr) {
                    recv_buffers.push_back(device.allocate(bytes));
                    slot = recv_buffers.back().data();
                }
                recv_slots.push_back(slot);
                y_slots.push_back(device.allocate(bytes));
                recv_done.push_back(device.make_event(EventUse::ordering));
                x_free.push_back(device.make_event(EventUse::ordering));
                y_free.push_back(device.make_event(EventUse::ordering));
            }
            c_buffer = device.allocate(plan.c_bytes);
            // B and C's check add their mismatches here, in the step's ring slot: host memory
            // the kernels write directly (pinned, so mapped on a GPU), read and zeroed by the
            // host when it retires the step, so a step needs no memset and no copy.
            counters_host = device.allocate_host(plan.counter_host_bytes);
            std::memset(counters_host.data(), 0, counters_host.bytes());
            y_pending.assign(depth, false);
        }
        for (std::size_t r = 0; r < ring; ++r) {
            StepMarks m;
            auto timing = [&] { return device.make_event(EventUse::timing); };
            if (producer) {
                m.a_start = timing();
                m.a_end = timing();
                m.send_end = timing();
            }
            if (consumer) {
                m.recv_start = timing();
                m.recv_end = timing();
                m.c_start = timing();
                m.c_end = timing();
                m.b_start = timing();
                m.b_end = timing();
            }
            m.end = timing();
            marks.push_back(std::move(m));
        }
        poison_slots();
    }

    std::string stream_label(const char* what) const {
        int rank = 0;
        MPI_CHECK(MPI_Comm_rank(mpi_comm, &rank));
        return "rank " + std::to_string(rank) + " " + std::string(to_string(placement.role)) +
               ": " + what;
    }

    // NaN bytes in every receive and result slot, so a read of data that never arrived is a
    // mismatch rather than a stale right answer.
    void poison_slots() {
        if (!consumer) return;
        for (std::size_t k = 0; k < depth; ++k) {
            device.fill_async(recv_slots[k], 0xff, bytes, *compute_stream);
            device.fill_async(y_slots[k].data(), 0xff, bytes, *compute_stream);
        }
        compute_stream->synchronize();
    }

    void synchronize_all() {
        if (producer) producer_stream->synchronize();
        if (consumer) {
            comm_stream->synchronize();
            compute_stream->synchronize();
            io_stream->synchronize();
        }
    }

    // Opens `phase`'s range of step `step` where its timing events are recorded: on a host
    // stream, by host ops on the stream's worker thread in queue order, so the range spans what
    // the events time; on a CUDA stream, on this thread around the calls that queue the phase
    // (Nsight Systems projects them onto the GPU work those calls launch).
    void begin_range(RangePhase phase, std::int64_t step, Stream& stream) {
        if constexpr (!nvtx::kBuilt) return;
        // A capture queues nothing that runs now; its replays get one range per launch.
        if (capturing) return;
        const StepRange range{step, phase, step < config.warmup};
        if (stream.backend() == Backend::host) {
            device.enqueue_host([range] { push_range(range); }, stream);
        } else {
            push_range(range);
        }
    }
    // Closes the range begin_range opened last on `stream`.
    void end_range(Stream& stream) {
        if constexpr (!nvtx::kBuilt) return;
        if (capturing) return;
        if (stream.backend() == Backend::host) {
            device.enqueue_host([] { nvtx::pop(); }, stream);
        } else {
            nvtx::pop();
        }
    }

    // Eager steps give the kernels the step number itself; a captured graph gives them the
    // device word it copies the step into first (StepArg).
    template <typename T>
    void queue_step(std::int64_t s, bool overlap, ResultWriter* writer, std::uint64_t& next_row) {
        const StepArg step(static_cast<std::uint64_t>(s));
        marks[static_cast<std::size_t>(s) % ring].phases = phase_timed(s);
        queue_exchange<T>(s, overlap, step);
        if (consumer) queue_compute<T>(s, overlap, step);
        queue_write(s, writer, next_row);
    }

    // Whether step s records the phase events, by the timing the pass uses: every step, none,
    // or every K-th timed step (not the warm-up steps); auto times every phase until it has
    // decided, at the first timed step.
    bool phase_timed(std::int64_t s) const {
        switch (pass_timing) {
            case Timing::steps:
                return false;
            case Timing::sampled:
                // From the first timed step on, so that even a short pass has a sample.
                return s >= pass_timed_from && (s - pass_timed_from) % pass_timing_every == 0;
            default:
                return true;
        }
    }

    // The consumer's stream for receiving: its own with overlap, else the compute stream, so
    // that C and B wait for the receive in stream order.
    Stream& receive_stream(bool overlap) { return overlap ? *comm_stream : *compute_stream; }

    // A and the send (producer stream); the receive (comm stream).
    template <typename T>
    void queue_exchange(std::int64_t s, bool overlap, StepArg step) {
        const std::size_t k = static_cast<std::size_t>(s) % depth;
        StepMarks& m = marks[static_cast<std::size_t>(s) % ring];
        Stream* comm = consumer ? &receive_stream(overlap) : nullptr;

        if (producer) {
            if (m.phases) m.a_start->record(*producer_stream);
            begin_range(RangePhase::a, s, *producer_stream);
            launch_a(send_slots[k].as<T>(), step, config.seed, *producer_stream);
            end_range(*producer_stream);
            if (m.phases) m.a_end->record(*producer_stream);
        }
        if (consumer) {
            // Slot k's x may be overwritten only once B of step s-depth, its last reader, is done
            // (without overlap B ran before, on this same stream).
            // In a graph, only when that B is in the same graph (an earlier graph has finished).
            const bool in_scope =
                !capturing || s - static_cast<std::int64_t>(depth) >= capture_first;
            if (overlap && in_scope && !config.debug_skip_reuse_wait) comm->wait(*x_free[k]);
            if (m.phases) m.recv_start->record(*comm);
        }
        // On a CUDA stream both ranges are host ranges around the group, so they nest.
        if (producer) begin_range(RangePhase::send, s, *producer_stream);
        if (consumer) begin_range(RangePhase::recv, s, *comm);
        std::optional<SendSide> send;
        std::optional<RecvSide> recv;
        if (producer)
            send.emplace(send_slots[k].data(), bytes, placement.peer, *producer_stream, k);
        if (consumer) recv.emplace(recv_slots[k], bytes, placement.peer, *comm, k);
        transport.exchange(send ? &*send : nullptr, recv ? &*recv : nullptr);
        if (consumer) end_range(*comm);
        if (producer) {
            end_range(*producer_stream);
            if (m.phases) m.send_end->record(*producer_stream);
            if (!consumer) m.end->record(*producer_stream);
        }
        if (!consumer) return;
        if (m.phases) m.recv_end->record(*comm);
        if (overlap) recv_done[k]->record(*comm);
    }

    // C, B and the checks (compute stream); B and the check count into the step's ring slot.
    template <typename T>
    void queue_compute(std::int64_t s, bool overlap, StepArg step) {
        const std::size_t k = static_cast<std::size_t>(s) % depth;
        const std::size_t r = static_cast<std::size_t>(s) % ring;
        StepMarks& m = marks[r];
        Stream& compute = *compute_stream;
        const auto c_iterations = static_cast<std::uint32_t>(config.c_iterations);
        Counter* slot_counters = counters_host.as<Counter>().data() + 2 * r;
        // c_elements = 0 disables C: its launches and its check would do nothing.
        const bool has_c = config.c_elements > 0;
        if (m.phases) m.c_start->record(compute);
        if (has_c) {
            begin_range(RangePhase::c, s, compute);
            launch_c(c_buffer.as<std::uint32_t>(), step, config.seed, c_iterations, compute);
            end_range(compute);
        }
        if (m.phases) m.c_end->record(compute);
        // The GPU, not the host, waits for the tensor to arrive (received on the comm stream
        // with overlap); and for slot k's previous y to be copied out before B overwrites it,
        // when it was being written.
        begin_range(RangePhase::wait, s, compute);
        if (overlap) compute.wait(*recv_done[k]);
        // (A graph waits for y_free before its launch: launch_unit.)
        if (!capturing && y_pending[k]) compute.wait(*y_free[k]);
        if (!capturing) y_pending[k] = false;
        end_range(compute);
        if (m.phases) m.b_start->record(compute);
        begin_range(RangePhase::b, s, compute);
        launch_b(Span<const T>{static_cast<const T*>(recv_slots[k]), bytes / sizeof(T)},
                 y_slots[k].as<T>(), static_cast<T>(config.alpha), step, config.seed, slot_counters,
                 compute);
        end_range(compute);
        if (m.phases) m.b_end->record(compute);
        if (overlap) x_free[k]->record(compute);
        // A transport that writes slot k from the producer's process waits for this instead.
        transport.release(k, compute);
        if (has_c) {
            begin_range(RangePhase::verify, s, compute);
            launch_verify_c(Span<const std::uint32_t>(c_buffer.as<std::uint32_t>()), step,
                            config.seed, c_iterations, slot_counters + 1, compute);
            end_range(compute);
        }
        m.end->record(compute);
    }

    // y of step s to the writer (io stream), when the run keeps that step. Always queued on the
    // host, graphs or not: which steps are written varies, and the writer's slots come from it.
    void queue_write(std::int64_t s, ResultWriter* writer, std::uint64_t& next_row) {
        if (!consumer || writer == nullptr || !config.writes_step(s)) return;
        const std::size_t k = static_cast<std::size_t>(s) % depth;
        const ResultWriter::Slot slot = writer->acquire();
        io_stream->wait(*marks[static_cast<std::size_t>(s) % ring].end);  // B has written y
        begin_range(RangePhase::write, s, *io_stream);
        device.copy_async(slot.host, y_slots[k].data(), bytes, *io_stream);
        end_range(*io_stream);
        slot.ready->record(*io_stream);
        y_free[k]->record(*io_stream);
        y_pending[k] = true;
        writer->submit(slot, next_row++, s);
    }

    // --- Graphs: G = graph_steps steps as one graph over all the rank's streams, replayed -----
    //
    // A graph holds G consecutive steps whose first is a multiple of G, so ring slot and tensor
    // slot repeat from one graph to the next: one capture per ring position of a graph serves
    // every launch there (R / G of them), in two variants where the timing needs both (with and
    // without the phase events). Every graph is launched on one stream, so each runs whole after
    // the one before: a wait on a slot's previous reader in an earlier graph is implied, and the
    // ordering events are edges inside the graph. What crosses its edge: the step's end event
    // and the phase events (event nodes: the host reads them, the io stream waits on end), and
    // y_free, waited on that stream before the launch. The kernels read their step from a word
    // the graph's first node copies from where the host wrote it for this launch.

    std::uint64_t* step_word_host(std::int64_t s) {
        return step_words_host.as<std::uint64_t>().data() + static_cast<std::size_t>(s) % ring;
    }
    std::uint64_t* step_word_device(std::int64_t s) {
        return step_words_device.as<std::uint64_t>().data() + static_cast<std::size_t>(s) % ring;
    }
    // The streams a graph covers; it is captured from and launched on the first.
    std::vector<Stream*> graph_streams(bool overlap) const {
        std::vector<Stream*> streams;
        if (producer) streams.push_back(producer_stream.get());
        if (consumer && overlap) streams.push_back(comm_stream.get());
        if (consumer) streams.push_back(compute_stream.get());
        return streams;
    }
    Stream& launch_stream(bool overlap) const { return *graph_streams(overlap).front(); }
    // Which captured graph serves the unit of steps from `first`: its ring position, and whether
    // it records the phase events.
    std::size_t graph_index(std::int64_t first, bool phased) const {
        return static_cast<std::size_t>(first) % ring /
                   static_cast<std::size_t>(config.graph_steps) * 2 +
               (phased ? 1 : 0);
    }
    // Whether steps s to s + G - 1 run as one graph launch: after the cold step, the first a
    // multiple of G, all within the pass and all on one side of the timed region's start.
    bool graph_unit_at(std::int64_t s, std::int64_t first_step, std::int64_t timed_from) const {
        const std::int64_t g = config.graph_steps;
        if (!config.graphs || s <= first_step || s % g != 0 || s + g > config.steps) return false;
        return s >= timed_from || s + g <= timed_from;
    }
    // Whether the graph of the steps from `first` times their phases (all or none of them do).
    // sampled:K samples every K-th graph, from the first timed one, so that graphs of G >= K
    // steps are not all phase-timed; otherwise a graph is phase-timed when its steps would be.
    bool unit_phased(std::int64_t first) const {
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
    void capture_graphs(bool overlap, PassResult& result) {
        const NvtxRange range("capture step graphs", kRangeColours[8]);
        const double start = now_ms();
        const std::int64_t g = config.graph_steps;
        unit_graphs.clear();
        unit_graphs.resize(2 * ring / static_cast<std::size_t>(g));
        const std::vector<Stream*> streams = graph_streams(overlap);
        Stream& origin = *streams.front();
        const std::vector<Stream*> joined(streams.begin() + 1, streams.end());
        // Capturing sets the ring slots' phase flags; the steps queued before it (the cold step,
        // not retired yet) keep theirs.
        std::vector<bool> phases_before;
        for (const StepMarks& m : marks) phases_before.push_back(m.phases);
        for (std::int64_t first = 0; first < static_cast<std::int64_t>(ring); first += g) {
            for (const bool phased : {false, true}) {
                if ((phased && config.timing == Timing::steps) ||
                    (!phased && config.timing == Timing::phases)) {
                    continue;
                }
                auto capture = device.begin_capture(origin, joined);
                capturing = true;
                capture_first = first;
                // The first node: the unit's steps, as the host wrote them for this launch; the
                // other streams start after it (an edge, as every ordering event here).
                device.copy_async(step_word_device(first), step_word_host(first),
                                  static_cast<std::size_t>(g) * sizeof(std::uint64_t), origin);
                graph_fork->record(origin);
                for (Stream* stream : joined) stream->wait(*graph_fork);
                for (std::int64_t s = first; s < first + g; ++s) {
                    marks[static_cast<std::size_t>(s) % ring].phases = phased;
                    const StepArg step(step_word_device(s));
                    queue_exchange<T>(s, overlap, step);
                    if (consumer) queue_compute<T>(s, overlap, step);
                }
                unit_graphs[graph_index(first, phased)] = capture->finish();
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
    // stream).
    void launch_unit(std::int64_t s, bool overlap, ResultWriter* writer, std::uint64_t& next_row,
                     PassResult& result) {
        const std::int64_t g = config.graph_steps;
        const bool phased = unit_phased(s);
        Stream& stream = launch_stream(overlap);
        for (std::int64_t j = s; j < s + g; ++j) {
            // Safe to overwrite: the ring slot's last user, step j - ring, was retired (its graph
            // finished) before the host queued this unit.
            *step_word_host(j) = static_cast<std::uint64_t>(j);
            marks[static_cast<std::size_t>(j) % ring].phases = phased;
            const std::size_t k = static_cast<std::size_t>(j) % depth;
            if (consumer && y_pending[k]) stream.wait(*y_free[k]);  // B must not overwrite y yet
            if (consumer) y_pending[k] = false;
        }
        if constexpr (nvtx::kBuilt) push_range({s, RangePhase::graph, s < config.warmup});
        unit_graphs[graph_index(s, phased)]->launch(stream);
        if constexpr (nvtx::kBuilt) nvtx::pop();
        result.graph_steps += g;
        for (std::int64_t j = s; j < s + g; ++j) queue_write(j, writer, next_row);
    }

    // Reads step s's times and counts (the host blocks here only if the GPU is R-1 steps behind).
    // Steps that time no phase keep NaN there; every step has its period (but a pass's first).
    void retire(std::int64_t s, PassResult& result) {
        const bool has_previous = s > result.first_step;
        const std::size_t r = static_cast<std::size_t>(s) % ring;
        const std::size_t prev =
            static_cast<std::size_t>(s + static_cast<std::int64_t>(ring) - 1) % ring;
        StepMarks& m = marks[r];
        StepTimes t;
        m.end->synchronize();
        if (has_previous) t.period = m.end->elapsed_ms_since(*marks[prev].end);
        if (m.phases && producer) {
            t.a = m.a_end->elapsed_ms_since(*m.a_start);
            t.send = m.send_end->elapsed_ms_since(*m.a_end);
        }
        if (m.phases && consumer) {
            t.recv = m.recv_end->elapsed_ms_since(*m.recv_start);
            t.c = m.c_end->elapsed_ms_since(*m.c_start);
            t.wait = m.b_start->elapsed_ms_since(*m.c_end);
            t.b = m.b_end->elapsed_ms_since(*m.b_start);
        }
        if (m.phases && s >= result.timed_from) ++result.phase_timed_steps;
        if (consumer) {
            // The step's kernels are done (its end event is reached): its counts are final, and
            // the slot's next step, queued after this, starts from zero.
            Counter* host_counters = counters_host.as<Counter>().data() + 2 * r;
            result.x_mismatches[static_cast<std::size_t>(s)] = host_counters[0];
            result.c_mismatches[static_cast<std::size_t>(s)] = host_counters[1];
            host_counters[0] = host_counters[1] = 0;
        }
        result.steps[static_cast<std::size_t>(s)] = t;
    }

    // timing = auto, at the first timed step (every stream idle): sampled when the warm-up steps
    // were short, on every rank alike (the slowest rank's steps decide). `warm_ms` is this
    // rank's time per warm-up step, +inf when there was none to judge from.
    void decide_timing(double warm_ms, PassResult& result) {
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &warm_ms, 1, MPI_DOUBLE, MPI_MAX, mpi_comm));
        result.timing_judged_ms = std::isinf(warm_ms) ? kNaN : warm_ms;
        if (warm_ms < kTimingAutoBelowMs) {
            pass_timing = Timing::sampled;
            pass_timing_every = kTimingAutoEvery;
        } else {
            pass_timing = Timing::phases;
        }
    }

    template <typename T>
    void spot_check_last(PassResult& result) {
        const std::int64_t last = result.end_step - 1;
        const std::size_t k = static_cast<std::size_t>(last) % depth;
        Buffer host = device.allocate_host(bytes);
        device.copy_async(host.data(), y_slots[k].data(), bytes, *compute_stream);
        compute_stream->synchronize();
        result.spot_checked += std::min<std::uint64_t>(kSpotSamples, config.elements);
        result.spot_mismatches +=
            spot_check_y(Span<const T>(host.as<T>()), static_cast<T>(config.alpha),
                         static_cast<std::uint64_t>(last), config.seed, kSpotSamples);
    }

    template <typename T>
    PassResult run(bool overlap, ResultWriter* writer, const StepCallback& on_step,
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
        pass_timed_from = result.timed_from;
        // When the warm-up steps (those after the cold one) started, for timing = auto.
        double warm_start = now_ms();
        const auto ring_steps = static_cast<std::int64_t>(ring);
        std::int64_t retired = first_step;  // the next step to retire
        bool in_graphs = false;             // whether the last steps queued were a graph

        MPI_CHECK(MPI_Barrier(mpi_comm));
        std::int64_t end = config.steps;
        // Each turn queues one step, or G steps as one graph launch.
        for (std::int64_t s = first_step; s < config.steps;) {
            const bool unit = graph_unit_at(s, first_step, result.timed_from);
            const std::int64_t n = unit ? config.graph_steps : 1;
            const bool timed = s >= result.timed_from;
            const double retire_start = now_ms();
            for (; retired <= s + n - ring_steps; ++retired) retire(retired, result);
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
                launch_unit(s, overlap, writer, next_row, result);
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
                break;
            }
        }
        result.end_step = end;
        for (; retired < end; ++retired) retire(retired, result);
        synchronize_all();
        MPI_CHECK(MPI_Barrier(mpi_comm));
        result.timed_wall_ms = end > result.timed_from ? now_ms() - timed_start : 0.0;
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

    const Config& config;
    Device& device;
    Transport& transport;
    PairPlacement placement;
    MPI_Comm mpi_comm;  // the ranks that run the pipeline together: they meet at its barriers
    bool producer;
    bool consumer;
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
    std::int64_t pass_timed_from = 0;
    // After the buffers: destroyed first, so no stream's queued work outlives what it uses.
    std::unique_ptr<Stream> producer_stream, comm_stream, compute_stream, io_stream;
    std::vector<std::unique_ptr<Event>> recv_done, x_free, y_free;
    std::vector<StepMarks> marks;
    Buffer step_words_host, step_words_device;  // graphs only
    std::unique_ptr<Event> graph_fork;          // graphs only: the other streams follow the first
    MemoryPlan plan;
    bool capturing = false;
    std::int64_t capture_first = 0;  // while capturing: the first step of the graph
    // Last: destroyed first, before the events and buffers their nodes name. See graph_index.
    std::vector<std::unique_ptr<Graph>> unit_graphs;
};

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
