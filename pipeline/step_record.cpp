#include "pipeline/step_record.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gpurelay {

RecordedSteps::RecordedSteps(const PipelineKeys& keys) : plan_(keys.recorded()) {
    const auto n = static_cast<std::size_t>(plan_.columns);
    columns_.steps.assign(n, -1);
    columns_.times.assign(n, StepTimes{});
    columns_.x_mismatches.assign(n, 0);
    columns_.c_mismatches.assign(n, 0);
}

// every:K keeps steps K-1, 2K-1, ... (as write = "every:K" writes them); last:N step s in ring
// column s mod N.
std::int64_t RecordedSteps::column_of(std::int64_t s) const {
    switch (plan_.mode) {
        case StepRecord::all:
            return s < plan_.columns ? s : -1;
        case StepRecord::every:
            return (s + 1) % plan_.count == 0 && (s + 1) / plan_.count <= plan_.columns
                       ? (s + 1) / plan_.count - 1
                       : -1;
        case StepRecord::last:
            return plan_.columns > 0 ? s % plan_.columns : -1;
        default:
            return -1;
    }
}

void RecordedSteps::keep(std::int64_t s, const StepTimes& times) {
    const std::int64_t column = column_of(s);
    if (column < 0) return;
    const auto i = static_cast<std::size_t>(column);
    if (columns_.steps[i] != s) {  // a ring column a step further on
        columns_.x_mismatches[i] = columns_.c_mismatches[i] = 0;
    }
    columns_.steps[i] = s;
    columns_.times[i] = times;
}

void RecordedSteps::keep_counts(std::int64_t s, Counter x, Counter c) {
    const std::int64_t column = column_of(s);
    if (column < 0 || columns_.steps[static_cast<std::size_t>(column)] != s) return;
    columns_.x_mismatches[static_cast<std::size_t>(column)] += x;
    columns_.c_mismatches[static_cast<std::size_t>(column)] += c;
}

std::size_t RecordedSteps::oldest() const {
    if (plan_.mode != StepRecord::last) return 0;
    // Unsigned, so that -1 (no step) is never the oldest.
    const auto& steps = columns_.steps;
    const auto oldest = std::ranges::min_element(
        steps, {}, [](std::int64_t s) { return static_cast<std::uint64_t>(s); });
    return static_cast<std::size_t>(oldest - steps.begin());
}

void SlowestSteps::offer(std::int64_t s, double period) {
    if (!std::isfinite(period)) return;
    const std::pair<double, std::int64_t> step{period, s};
    const auto slower = std::greater<>();
    if (heap_.size() < kSlowestKept) {
        heap_.push_back(step);
        std::push_heap(heap_.begin(), heap_.end(), slower);
    } else if (period > heap_.front().first) {
        std::pop_heap(heap_.begin(), heap_.end(), slower);
        heap_.back() = step;
        std::push_heap(heap_.begin(), heap_.end(), slower);
    }
}

std::vector<std::pair<double, std::int64_t>> SlowestSteps::slowest() const {
    std::vector<std::pair<double, std::int64_t>> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    return sorted;
}

}  // namespace gpurelay
