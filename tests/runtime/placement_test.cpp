#include "runtime/placement.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>
#include <vector>

namespace gpurelay {
namespace {

TEST(RangeList, TextAndNumbersRoundTrip) {
    const std::vector<int> numbers = {0, 1, 2, 3, 7, 9, 10};
    EXPECT_EQ(range_list_text(numbers), "0-3,7,9-10");
    EXPECT_EQ(range_list_numbers("0-3,7,9-10"), numbers);
    EXPECT_EQ(range_list_numbers("5"), std::vector<int>{5});
    // Overlapping and unsorted items: sorted and distinct.
    EXPECT_EQ(range_list_numbers("3,1-2,2"), (std::vector<int>{1, 2, 3}));
}

TEST(RangeList, NotARangeListIsEmpty) {
    for (const char* text : {"", "a", "3-", "-3", "5-2", "1,,2", "1x", "1-2-3"}) {
        EXPECT_TRUE(range_list_numbers(text).empty()) << text;
    }
}

// This process's placement under an affinity of one core (its first allowed), as a binding
// launcher leaves it: that core, counted once; the machine's online cores are at least it; no
// GPU, no GPU node.
TEST(Placement, TheCoresThisProcessMayRunOn) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    int first = 0;
    while (!CPU_ISSET(first, &allowed)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    const Placement placement = this_process_placement("");
    ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
    EXPECT_EQ(placement.cores, std::to_string(first));
    EXPECT_EQ(placement.core_count, 1);
    EXPECT_GE(placement.online_cores, 1);
    EXPECT_TRUE(placement.core_numa.empty() || range_list_numbers(placement.core_numa).size() == 1)
        << placement.core_numa;
    EXPECT_EQ(placement.gpu_numa, "");
    // Unrestricted again: every allowed core.
    EXPECT_EQ(this_process_placement("").core_count, CPU_COUNT(&allowed));
}

}  // namespace
}  // namespace gpurelay
