// The did-you-mean hint: the candidate name nearest to an unknown one.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace gpurelay {
namespace {

std::size_t levenshtein(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string closest_name(std::string_view unknown,
                         const std::vector<std::string_view>& candidates) {
    // Short names get a fixed allowance, long ones a proportional one, so that "ovrelap" finds
    // "overlap" but "x" does not match every two-letter key.
    const std::size_t limit = std::max<std::size_t>(2, unknown.size() / 3);
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const std::string_view candidate : candidates) {
        const std::size_t distance = levenshtein(unknown, candidate);
        if (distance < best_distance) {
            best_distance = distance;
            best = candidate;
        }
    }
    return best;
}

}  // namespace gpurelay
