// The shortest period a pipelined step can have, given how long each of its phases takes: the
// figure a measured time per step is held against. It follows the streams' structure:
// - the producer runs A, then the send of that slot, on one stream: A + transfer per step;
// - overlap off: the consumer receives, runs C and then B on one stream: transfer + C + B;
// - overlap on, depth >= 2: the receive runs on its own stream, so the consumer's compute
//   stream (C, then B) is the other chain: C + B;
// - overlap on, depth 1: the next receive may start only once B has read the one slot, and C
//   runs alongside that receive: max(transfer, C) + B.
// The bound leaves out what the phases do not time (zeroing counters, checking C), so a real
// step is a little longer even with perfect overlap.
#pragma once

#include <cstdint>
#include <string>

namespace gpurelay {

// Median phase times of one step, in milliseconds.
struct PhaseMedians {
    double a = 0, transfer = 0, c = 0, b = 0;
};

// The lower bound on the time per step, in milliseconds, for `depth` slots with or without
// overlap.
double step_bound_ms(const PhaseMedians& phases, std::int64_t depth, bool overlap);
// The bound as a formula, for the report: "max(A + transfer, C + B)" and the like.
std::string step_bound_formula(std::int64_t depth, bool overlap);

}  // namespace gpurelay
