// What a pass keeps of its steps besides the histograms, bounded however many run: the columns the
// file keeps (step_record), and the rank's slowest steps (to name them on a profile's timeline).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "kernels/kernels.hpp"
#include "pipeline/phase.hpp"

namespace gpurelay {

class RecordedSteps {
  public:
    RecordedSteps() = default;
    explicit RecordedSteps(const PipelineKeys& keys);
    // Step s's times and wrong-element counts, kept when step_record keeps s (counts add up: a
    // step's two counts may come apart).
    void keep(std::int64_t s, const StepTimes& times);
    void keep_counts(std::int64_t s, Counter x, Counter c);

    struct Columns {
        std::vector<std::int64_t> steps;  // each column's (-1 where none ran)
        std::vector<StepTimes> times;
        std::vector<Counter> x_mismatches, c_mismatches;
    };
    const Columns& columns() const { return columns_; }
    // The file lays the columns out from this one on, cyclically: the oldest kept step's where
    // last:N's ring has turned, else 0 (all and every:K keep theirs in step order).
    std::size_t oldest() const;

  private:
    std::int64_t column_of(std::int64_t s) const;

    PipelineKeys::Recorded plan_{StepRecord::none, 0, 0};
    Columns columns_;
};

// A rank's kSlowestKept slowest timed steps by period: (period, step), the slowest first.
class SlowestSteps {
  public:
    static constexpr std::size_t kSlowestKept = 64;
    void offer(std::int64_t s, double period);
    std::vector<std::pair<double, std::int64_t>> slowest() const;

  private:
    std::vector<std::pair<double, std::int64_t>> heap_;  // a min-heap of the slowest so far
};

}  // namespace gpurelay
