// A pass's plan: what its steps do the same way every time, worked out once before the pass, so
// the schedule (step.cpp) reads them instead of asking per step.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace gpurelay {

// Where a consumer's receive goes: three places, from two inputs (the table below).
enum class ReceivePlacement : std::uint8_t {
    comm_stream,  // on the comm stream before C: beside C, and B waits for it (arrived[k])
    before_c,     // on the compute stream before C: C and B wait for it in stream order
    // On the compute stream after C, in the wait phase: a receive that only waits has nothing to
    // run beside C, and a comm stream would add a stream and two event hops a step.
    in_wait,
};

struct ReceiveRule {
    bool receive_waits;  // the transport's receive only waits (Transport::receive_waits)
    bool overlap;
    ReceivePlacement placement;
};

// clang-format off
inline constexpr std::array<ReceiveRule, 4> kReceivePlacement = {{
    // receive_waits  overlap  placement
    {false,           true,    ReceivePlacement::comm_stream},
    {false,           false,   ReceivePlacement::before_c},
    {true,            true,    ReceivePlacement::in_wait},
    {true,            false,   ReceivePlacement::before_c},
}};
// clang-format on

constexpr ReceivePlacement receive_placement(bool receive_waits, bool overlap) {
    for (const ReceiveRule& row : kReceivePlacement) {
        if (row.receive_waits == receive_waits && row.overlap == overlap) return row.placement;
    }
    return ReceivePlacement::before_c;  // not reached: every pair of inputs has its row
}

static_assert(
    [] {
        for (const bool waits : {false, true}) {
            for (const bool overlap : {false, true}) {
                int rows = 0;
                for (const ReceiveRule& row : kReceivePlacement) {
                    rows += row.receive_waits == waits && row.overlap == overlap ? 1 : 0;
                }
                if (rows != 1) return false;
            }
        }
        return true;
    }(),
    "kReceivePlacement: one row for each pair of inputs");

struct PassPlan {
    const PipelineSpec* spec = nullptr;
    bool overlap = true;
    std::int64_t first_step = 0;  // the pass's first step (after a resume, not 0)
    std::int64_t timed_from = 0;  // its first timed step
    RowSink* sink = nullptr;      // where y goes (consumers that write; else null)

    // The streams, null where the rank plays no such side: A and the send; the receive, as
    // `receive_at` places it; C and B; where a step ends (the compute stream on a consumer).
    Stream* produce = nullptr;
    Stream* receive = nullptr;
    Stream* compute = nullptr;
    Stream* last = nullptr;
    ReceivePlacement receive_at = ReceivePlacement::before_c;
    // Whether the recv phase is timed: not a receive that only waits, whose time is waiting.
    bool times_receive = true;
    // The streams a graph covers, the one it is captured from and launched on first.
    std::vector<Stream*> graph_streams;
    bool capturing = false;  // StepSchedule::set_capturing

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
