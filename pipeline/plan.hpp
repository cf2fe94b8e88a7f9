// A pass's plan: what its steps do the same way every time, worked out once before the pass, so
// the schedule (step.cpp) reads them instead of asking per step.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace gpurelay {

struct PassPlan {
    const PipelineSpec* spec = nullptr;
    bool overlap = true;
    std::int64_t first_step = 0;  // the pass's first step (after a resume, not 0)
    std::int64_t timed_from = 0;  // its first timed step
    RowSink* sink = nullptr;      // where y goes (consumers that write; else null)

    // The streams. `produce`: A and the send (producers). `receive`: where the consumer receives:
    // a stream of its own with overlap, so C runs beside it, else the compute stream (C and B
    // then wait for the receive in stream order); `receive_first`: queued before C, or after it
    // on the compute stream when the receive only waits for the producer's side (nothing to run
    // beside C, and a comm stream would add a stream and two event hops a step). `last`: where
    // a step ends (the compute stream on a consumer). Null where the rank plays no such side.
    Stream* produce = nullptr;
    Stream* receive = nullptr;
    Stream* compute = nullptr;
    Stream* last = nullptr;
    bool receive_first = true;
    // Whether the recv phase is timed: not a receive that only waits, whose time is waiting.
    bool times_receive = true;
    // The streams a graph covers, the one it is captured from and launched on first.
    std::vector<Stream*> graph_streams;
    // While graphs are captured: waits that a graph's launch makes for it are left out.
    bool capturing = false;

    // Whether the steps s .. s + G - 1 run as one graph launch: after the cold step, the first a
    // multiple of G, all within the pass and all on one side of the timed region's start.
    bool graph_unit_at(std::int64_t s) const {
        const std::int64_t g = spec->graph_steps;
        if (!spec->graphs || s <= first_step || s % g != 0 || s + g > spec->steps) return false;
        return s >= timed_from || s + g <= timed_from;
    }
    std::int64_t unit_steps(std::int64_t s) const {
        return graph_unit_at(s) ? spec->graph_steps : 1;
    }
    // Whether this rank copies step s's y out.
    bool writes(std::int64_t s) const { return sink != nullptr && spec->writes_step(s); }
};

}  // namespace gpurelay
