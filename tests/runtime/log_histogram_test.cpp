// The log-bucket histogram against exact order statistics of the same values.
#include "runtime/log_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace gpurelay {
namespace {

// numpy.percentile's default over sorted values.
double exact_quantile(const std::vector<double>& sorted, double q) {
    const double at = (static_cast<double>(sorted.size()) - 1) * q;
    const auto below = static_cast<std::size_t>(std::floor(at));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// Times spread over six decades, as a run's phases are (a few ns to a second), with a tail.
std::vector<double> sample_times(std::size_t n, unsigned seed) {
    std::mt19937_64 random(seed);
    std::lognormal_distribution<double> times(std::log(0.05), 2.0);
    std::vector<double> values(n);
    for (double& v : values) v = times(random);
    return values;
}

TEST(LogHistogram, EveryQuantileWithinItsRelativeError) {
    std::vector<double> values = sample_times(20001, 1);
    LogHistogram h;
    for (double v : values) h.add(v);
    std::sort(values.begin(), values.end());
    ASSERT_EQ(h.count(), values.size());
    for (double q = 0; q <= 1.0; q += 0.001) {
        const double exact = exact_quantile(values, q);
        EXPECT_NEAR(h.quantile(q), exact, LogHistogram::kRelativeError * exact * (1 + 1e-9))
            << "q = " << q;
    }
    for (std::uint64_t k = 0; k < values.size(); k += 97) {
        EXPECT_NEAR(h.at_rank(k), values[k], LogHistogram::kRelativeError * values[k] * 1.000001);
    }
    EXPECT_EQ(h.at_rank(0), values.front());
    EXPECT_EQ(h.at_rank(values.size() - 1), values.back());
    EXPECT_EQ(h.least(), values.front());
    EXPECT_EQ(h.most(), values.back());
}

TEST(LogHistogram, MergedEqualsAddedTogetherAndSumsAreExact) {
    const std::vector<double> a = sample_times(1000, 2), b = sample_times(3000, 3);
    LogHistogram ha, hb, all;
    for (double v : a) ha.add(v), all.add(v);
    for (double v : b) hb.add(v), all.add(v);
    ha.merge(hb);
    EXPECT_TRUE(std::equal(ha.counts().begin(), ha.counts().end(), all.counts().begin()));
    const LogHistogram rebuilt(all.counts(), all.sums());
    EXPECT_EQ(rebuilt.count(), 4000u);
    EXPECT_EQ(rebuilt.quantile(0.99), all.quantile(0.99));
    double sum = 0, squares = 0;
    for (const auto* part : {&a, &b}) {
        for (double v : *part) sum += v;
    }
    const double mean = sum / 4000;
    for (const auto* part : {&a, &b}) {
        for (double v : *part) squares += (v - mean) * (v - mean);
    }
    EXPECT_NEAR(all.mean(), mean, 1e-12 * mean);
    EXPECT_NEAR(all.cv(), std::sqrt(squares / 4000) / mean, 1e-9);
}

TEST(LogHistogram, LeavesOutWhatWasNotTimedAndKeepsTheEnds) {
    LogHistogram h;
    EXPECT_TRUE(std::isnan(h.quantile(0.5)));
    EXPECT_TRUE(std::isnan(h.cv()));
    h.add(std::nan(""));
    h.add(INFINITY);
    EXPECT_EQ(h.count(), 0u);
    h.add(0.0);  // a phase that queued nothing: bucket 0
    h.add(3e7);  // past the last bucket's start
    h.add(2.0);
    EXPECT_EQ(h.counts().front(), 1u);
    EXPECT_EQ(h.counts().back(), 1u);
    EXPECT_EQ(h.quantile(0), 0.0);
    EXPECT_EQ(h.quantile(1), 3e7);
    EXPECT_NEAR(h.quantile(0.5), 2.0, 2.0 * LogHistogram::kRelativeError);
    EXPECT_EQ(h.count_above(1.0), 2u);
    EXPECT_EQ(LogHistogram::bucket_count(), 2996u);
}

}  // namespace
}  // namespace gpurelay
