// What a pass keeps of its steps: step_record's columns and the slowest steps.
#include "pipeline/step_record.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace gpurelay {
namespace {

RecordedSteps record(const char* mode, std::int64_t count, std::int64_t steps) {
    PipelineKeys keys;
    keys.steps = steps;
    keys.step_record = mode[0] == 'l' ? StepRecord::last : StepRecord::every;
    keys.step_record_count = count;
    return RecordedSteps(keys);
}

// The steps a record holds in the file's order (from its oldest column on, cyclically).
std::vector<std::int64_t> in_file_order(const RecordedSteps& r) {
    const std::vector<std::int64_t>& steps = r.columns().steps;
    std::vector<std::int64_t> ordered;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        ordered.push_back(steps[(r.oldest() + i) % steps.size()]);
    }
    return ordered;
}

TEST(RecordedSteps, LastNKeepsTheLastStepsOldestFirst) {
    RecordedSteps r = record("last", 4, 100);
    for (std::int64_t s = 0; s < 11; ++s) {
        StepTimes t;
        t.period = static_cast<double>(s);
        r.keep(s, t);
        r.keep_counts(s, static_cast<Counter>(s), 0);
    }
    EXPECT_EQ(in_file_order(r), (std::vector<std::int64_t>{7, 8, 9, 10}));
    for (std::size_t i = 0; i < 4; ++i) {
        const std::size_t c = (r.oldest() + i) % 4;
        EXPECT_EQ(r.columns().times[c].period, static_cast<double>(r.columns().steps[c]));
        // A column a step further on forgets the counts of the step it held.
        EXPECT_EQ(r.columns().x_mismatches[c], static_cast<Counter>(r.columns().steps[c]));
    }
    // A resumed pass from step 5 that stops after step 6: no step in the rest.
    RecordedSteps partial = record("last", 4, 100);
    for (std::int64_t s = 5; s < 7; ++s) partial.keep(s, StepTimes{});
    EXPECT_EQ(in_file_order(partial), (std::vector<std::int64_t>{5, 6, -1, -1}));
}

TEST(RecordedSteps, EveryKKeepsTheStepsWriteEveryKWrites) {
    RecordedSteps r = record("every", 3, 10);
    for (std::int64_t s = 0; s < 10; ++s) r.keep(s, StepTimes{});
    EXPECT_EQ(in_file_order(r), (std::vector<std::int64_t>{2, 5, 8}));
}

TEST(SlowestSteps, KeepsTheSlowestWithTheirNumbers) {
    SlowestSteps slowest;
    for (std::int64_t s = 0; s < 1000; ++s) slowest.offer(s, static_cast<double>((s * 37) % 1000));
    slowest.offer(1000, StepTimes::kNone);  // a step without a period
    const auto kept = slowest.slowest();
    ASSERT_EQ(kept.size(), SlowestSteps::kSlowestKept);
    EXPECT_EQ(kept.front().first, 999.0);
    EXPECT_EQ(kept.back().first, 1000.0 - SlowestSteps::kSlowestKept);
    for (const auto& [period, step] : kept) EXPECT_EQ((step * 37) % 1000, period);
}

}  // namespace
}  // namespace gpurelay
