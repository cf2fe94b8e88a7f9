// The sequence words' host side: the wrap-around order, and the wake-up a store gives a waiter in
// the same process.
#include "runtime/host_word.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(HostWord, ReachedInWrapAroundOrder) {
    EXPECT_TRUE(word_reached(5, 5));
    EXPECT_TRUE(word_reached(6, 5));
    EXPECT_FALSE(word_reached(4, 5));
    EXPECT_TRUE(word_reached(2, 0xFFFFFFFEu));   // past the wrap
    EXPECT_FALSE(word_reached(0xFFFFFFFEu, 2));  // before it
}

// A waiter whose pauses have grown long is woken by a store in its process at once, not at the
// end of its pause. With a longest pause of 10 s, the pauses double from 10 us: one starts about
// 1.31 s into the wait and lasts 1.31 s, so a store 1.4 s in that woke no one would be seen only
// about 1.2 s late; the bound below is half of that, and far above a wake-up's own delay.
TEST(HostWord, AStoreFromAnotherThreadEndsAPauseAtOnce) {
    set_host_wait({HostWait::sparing, "test"});  // the pauses may grow to the caller's longest
    std::uint32_t word = 0;
    steady_clock::time_point stored;
    std::thread writer([&] {
        std::this_thread::sleep_for(milliseconds(1400));
        stored = steady_clock::now();
        store_host_word(&word, 1);
    });
    wait_host_word(&word, 1, milliseconds(20000), "the test's word", std::chrono::seconds(10));
    const auto woken = steady_clock::now();
    writer.join();
    EXPECT_LT(woken - stored, milliseconds(600)) << "the store did not end the waiter's pause";
}

}  // namespace
}  // namespace gpurelay
