#include "pipeline/step_bound.hpp"

#include <algorithm>

namespace gpurelay {

double step_bound_ms(const PhaseMedians& p, std::int64_t depth, bool overlap) {
    const double producer = p.a + p.transfer;
    double consumer = p.transfer + p.c + p.b;
    if (overlap) consumer = depth == 1 ? std::max(p.transfer, p.c) + p.b : p.c + p.b;
    return std::max(producer, consumer);
}

std::string step_bound_formula(std::int64_t depth, bool overlap) {
    if (!overlap) return "max(A + transfer, transfer + C + B)";
    return depth == 1 ? "max(A + transfer, max(transfer, C) + B)" : "max(A + transfer, C + B)";
}

}  // namespace gpurelay
