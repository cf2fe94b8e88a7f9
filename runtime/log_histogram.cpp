#include "runtime/log_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The buckets from kLowest up to the first that reaches kHighest.
std::size_t inner_buckets() {
    static const auto n = static_cast<std::size_t>(std::ceil(
        std::log(LogHistogram::kHighest / LogHistogram::kLowest) / std::log(LogHistogram::kGamma)));
    return n;
}

}  // namespace

std::size_t LogHistogram::bucket_count() { return inner_buckets() + 2; }

std::size_t LogHistogram::bucket_of(double value) {
    if (!(value > kLowest)) return 0;
    static const double log_gamma = std::log(kGamma);
    const double at = std::ceil(std::log(value / kLowest) / log_gamma);
    return std::min(static_cast<std::size_t>(std::max(at, 1.0)), inner_buckets() + 1);
}

double LogHistogram::bucket_value(std::size_t bucket) {
    if (bucket == 0) return 0.0;
    if (bucket > inner_buckets()) return kHighest;
    return 2 * kLowest * std::pow(kGamma, static_cast<double>(bucket)) / (kGamma + 1);
}

LogHistogram::LogHistogram(std::span<const std::uint64_t> counts, const Sums& sums)
    : counts_(counts.begin(), counts.end()), sums_(sums) {
    counts_.resize(bucket_count(), 0);
    for (const std::uint64_t n : counts_) count_ += n;
}

void LogHistogram::add(double value) {
    if (!std::isfinite(value)) return;
    ++counts_[bucket_of(value)];
    ++count_;
    sums_.sum += value;
    sums_.squares += value * value;
    sums_.least = std::min(sums_.least, value);
    sums_.most = std::max(sums_.most, value);
}

void LogHistogram::merge(const LogHistogram& other) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sums_.sum += other.sums_.sum;
    sums_.squares += other.sums_.squares;
    sums_.least = std::min(sums_.least, other.sums_.least);
    sums_.most = std::max(sums_.most, other.sums_.most);
}

double LogHistogram::least() const { return count_ > 0 ? sums_.least : kNaN; }
double LogHistogram::most() const { return count_ > 0 ? sums_.most : kNaN; }
double LogHistogram::mean() const {
    return count_ > 0 ? sums_.sum / static_cast<double>(count_) : kNaN;
}

double LogHistogram::cv() const {
    const double m = mean();
    const double variance = sums_.squares / static_cast<double>(count_) - m * m;
    return std::sqrt(std::max(0.0, variance)) / m;
}

double LogHistogram::at_rank(std::uint64_t k) const {
    if (count_ == 0) return kNaN;
    if (k == 0) return sums_.least;
    if (k >= count_ - 1) return sums_.most;
    std::uint64_t below = 0;
    std::size_t bucket = 0;
    while (below + counts_[bucket] <= k) below += counts_[bucket++];
    return std::clamp(bucket_value(bucket), sums_.least, sums_.most);
}

double LogHistogram::quantile(double q) const {
    if (count_ == 0) return kNaN;
    const double at = static_cast<double>(count_ - 1) * q;
    const auto below = static_cast<std::uint64_t>(std::floor(at));
    const double low = at_rank(below);
    return low + (at - static_cast<double>(below)) * (at_rank(below + 1) - low);
}

std::uint64_t LogHistogram::count_above(double bound) const {
    std::uint64_t above = 0;
    if (count_ == 0) return 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
        if (std::clamp(bucket_value(i), sums_.least, sums_.most) > bound) above += counts_[i];
    }
    return above;
}

}  // namespace gpurelay
