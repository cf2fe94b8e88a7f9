// The slot protocol's flags on the host: the wrap-around order, the wake-up a store gives a waiter
// in the same process, and two sides handing a ring of slots back and forth with the counts kept
// beside the flags.
#include "runtime/slot_flags.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/error.hpp"
#include "runtime/poll.hpp"

namespace gpurelay {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(SlotFlags, ReachedInWrapAroundOrder) {
    EXPECT_TRUE(reached(5, 5));
    EXPECT_TRUE(reached(6, 5));
    EXPECT_FALSE(reached(4, 5));
    EXPECT_TRUE(reached(2, 0xFFFFFFFEu));   // past the wrap
    EXPECT_FALSE(reached(0xFFFFFFFEu, 2));  // before it
    EXPECT_TRUE(reached(3, 0xfffffff0u));   // a count that wrapped is past one before it
    EXPECT_FALSE(reached(0xfffffff0u, 3));
}

// A waiter whose pauses have grown long is woken by a store in its process at once, not at the
// end of its pause. With a longest pause of 10 s, the pauses double from 10 us: one starts about
// 1.31 s into the wait and lasts 1.31 s, so a store 1.4 s in that woke no one would be seen only
// about 1.2 s late; the bound below is half of that, and far above a wake-up's own delay.
TEST(SlotFlags, AStoreFromAnotherThreadEndsAPauseAtOnce) {
    set_host_wait({HostWait::sparing, "test"});  // the pauses may grow to the caller's longest
    std::uint32_t word = 0;
    steady_clock::time_point stored;
    std::thread writer([&] {
        std::this_thread::sleep_for(milliseconds(1400));
        stored = steady_clock::now();
        store_release(&word, 1u);
    });
    wait_until(&word, 1, milliseconds(20000), "the test's word", std::chrono::seconds(10));
    const auto woken = steady_clock::now();
    writer.join();
    EXPECT_LT(woken - stored, milliseconds(600)) << "the store did not end the waiter's pause";
}

TEST(SlotFlags, AWaitThatRunsOutSaysSo) {
    std::uint32_t word = 0;
    EXPECT_FALSE(wait_until(&word, 1, now_ns() + 20'000'000));
    try {
        wait_until(&word, 1, milliseconds(20), "the test's word", std::chrono::microseconds(100));
        FAIL() << "no timeout";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the test's word"), std::string::npos) << e.what();
    }
}

// Both sides of a ring of `depth` slots, over the same two words per slot, each side with the
// uses it has counted so far.
struct Ring {
    explicit Ring(std::uint32_t depth, std::uint32_t uses = 0)
        : arrived(depth, uses), released(depth, uses), data(depth, -1) {
        for (bool consumer : {false, true}) {
            SlotFlags& f = consumer ? consumer_side : producer_side;
            f.slots = depth;
            f.ahead = consumer ? 1 : 0;
            f.reuse_wait = true;
            for (std::uint32_t k = 0; k < depth; ++k) {
                f.slot[k] = &data[k];
                f.inbound[k] = consumer ? &arrived[k] : &released[k];
                f.outbound[k] = consumer ? &released[k] : &arrived[k];
                f.uses[k] = uses;
            }
        }
    }
    std::vector<std::uint32_t> arrived, released;
    std::vector<std::int64_t> data;
    SlotFlags producer_side{}, consumer_side{};
};

// A producer writes step s into slot s mod depth and a consumer reads it, each on its own thread:
// every step arrives in order and is never overwritten before it is read, and both sides' counts
// end at the slot's uses, which its two words hold too.
TEST(SlotFlags, TwoSidesHandEveryUseOfEverySlotOver) {
    for (const std::uint32_t depth : {1u, 3u}) {
        // The counts start past the wrap, as a long run's do.
        Ring ring(depth, 0xFFFFFFF0u);
        constexpr std::int64_t kSteps = 200;
        std::thread producer([&] {
            for (std::int64_t s = 0; s < kSteps; ++s) {
                const auto k = static_cast<std::size_t>(s) % depth;
                ASSERT_TRUE(ring.producer_side.wait(k, now_ns() + 20'000'000'000ull));
                ring.data[k] = s;
                ring.producer_side.signal(k);
            }
        });
        std::vector<std::int64_t> read;
        for (std::int64_t s = 0; s < kSteps; ++s) {
            const auto k = static_cast<std::size_t>(s) % depth;
            ASSERT_TRUE(ring.consumer_side.wait(k, now_ns() + 20'000'000'000ull));
            EXPECT_FALSE(ring.consumer_side.stopped(k));
            read.push_back(ring.data[k]);
            ring.consumer_side.signal(k);
        }
        producer.join();
        for (std::int64_t s = 0; s < kSteps; ++s) ASSERT_EQ(read[s], s) << "depth " << depth;
        for (std::uint32_t k = 0; k < depth; ++k) {
            const std::uint32_t uses = 0xFFFFFFF0u + (kSteps - k + depth - 1) / depth;
            EXPECT_EQ(ring.producer_side.uses[k], uses);
            EXPECT_EQ(ring.consumer_side.uses[k], uses);
            EXPECT_EQ(ring.arrived[k], uses);
            EXPECT_EQ(ring.released[k], uses);
        }
    }
}

// The producer's stop mark ends the consumer's wait for the use that never comes, and is told
// from that use; the counts stay at the uses made.
TEST(SlotFlags, TheStopMarkEndsTheConsumersWait) {
    Ring ring(2, 7);
    ASSERT_TRUE(ring.producer_side.wait(0, now_ns()));  // slot 0's last use is released
    ring.producer_side.signal(0);
    ASSERT_TRUE(ring.consumer_side.wait(0, now_ns()));
    EXPECT_FALSE(ring.consumer_side.stopped(0));
    ring.consumer_side.signal(0);
    EXPECT_FALSE(ring.consumer_side.wait(1, now_ns() + 1'000'000));  // nothing in slot 1 yet
    ASSERT_TRUE(ring.producer_side.wait(1, now_ns()));
    ring.producer_side.signal_stop(1);
    ASSERT_TRUE(ring.consumer_side.wait(1, now_ns()));
    EXPECT_TRUE(ring.consumer_side.stopped(1));
    EXPECT_EQ(ring.producer_side.uses[1], 7u);
    EXPECT_EQ(ring.consumer_side.uses[1], 7u);
    EXPECT_EQ(ring.producer_side.uses[0], 8u);
}

}  // namespace
}  // namespace gpurelay
