#include "runtime/placement.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpurelay
