// A mergeable histogram of times in log-spaced buckets (DDSketch): bucket i holds (lowest x
// gamma^(i-1), lowest x gamma^i] and stands for 2 lowest gamma^i / (gamma + 1), within
// kRelativeError of each, as is any quantile read back. Constant memory; merged by adding counts
// (an MPI sum). Beside the counts: exact count, sum, sum of squares, least, largest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace gpurelay {

class LogHistogram {
  public:
    // Of any value read back: a bucket's value against the values it holds.
    static constexpr double kRelativeError = 0.005;
    static constexpr double kGamma = (1 + kRelativeError) / (1 - kRelativeError);
    // Bucket 0 holds the values up to kLowest (times in ms: 1 ns, and 0); the last bucket those
    // above the bucket under kHighest (ms: 2.8 hours).
    static constexpr double kLowest = 1e-6;
    static constexpr double kHighest = 1e7;
    // How many buckets every histogram has (2,996).
    static std::size_t bucket_count();
    static std::size_t bucket_of(double value);
    // Bucket i's value (bucket 0: 0, the last: kHighest), read back clamped to least and largest.
    static double bucket_value(std::size_t bucket);

    // The exact figures beside the counts: over ranks, sums add and extremes take the extreme.
    struct Sums {
        double sum = 0, squares = 0;
        double least = std::numeric_limits<double>::infinity();
        double most = -std::numeric_limits<double>::infinity();
    };

    LogHistogram() : counts_(bucket_count(), 0) {}
    // A histogram from counts and sums reduced over ranks.
    LogHistogram(std::span<const std::uint64_t> counts, const Sums& sums);

    // NaN and infinities are left out (a phase a step did not time).
    void add(double value);
    void merge(const LogHistogram& other);

    std::uint64_t count() const { return count_; }
    std::span<const std::uint64_t> counts() const { return counts_; }
    const Sums& sums() const { return sums_; }
    // NaN when empty, as every figure below.
    double least() const;
    double most() const;
    double mean() const;
    // The population standard deviation over the mean, from the exact sums.
    double cv() const;
    // The k-th least value (k from 0), within kRelativeError; the least and the largest exact.
    double at_rank(std::uint64_t k) const;
    // numpy.percentile's "linear" default at q in [0, 1]: at_rank(floor((n - 1) q)) to the next.
    double quantile(double q) const;
    // How many values lie above `bound`, counted by bucket (a bucket whose value is above it).
    std::uint64_t count_above(double bound) const;

  private:
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    Sums sums_;
};

}  // namespace gpurelay
