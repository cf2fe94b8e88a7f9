// The shortest period a pipelined step can have, given its phases' times, from the streams'
// structure: the producer runs A + transfer on one stream; the consumer, overlap off, transfer +
// C + B on one; overlap on, depth >= 2, the receive has its own stream, leaving C + B; depth 1,
// the next receive waits for B to read the one slot, and C runs beside it: max(transfer, C) + B.
// It leaves out what the phases do not time (checking C), so a real step is a little longer.
#pragma once

#include <cstdint>
#include <string>

namespace gpurelay {

struct PhaseMedians {  // of one step, in milliseconds
    double a = 0, transfer = 0, c = 0, b = 0;
};

// The bound in milliseconds, and as a formula for the report ("max(A + transfer, C + B)").
double step_bound_ms(const PhaseMedians& phases, std::int64_t depth, bool overlap);
std::string step_bound_formula(std::int64_t depth, bool overlap);

}  // namespace gpurelay
