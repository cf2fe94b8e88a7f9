// The hosts' polling: auto's rule, and the pauses each policy allows between looks.
#include "runtime/poll.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace gpurelay {
namespace {

using std::chrono::microseconds;

TEST(HostWait, CpuPathPromptOnlyWithACoreForEachThread) {
    EXPECT_EQ(host_wait_for(false, 16, 16), HostWait::prompt);
    EXPECT_EQ(host_wait_for(false, 1, 2), HostWait::prompt);
    EXPECT_EQ(host_wait_for(false, 17, 16), HostWait::sparing);
    EXPECT_EQ(host_wait_for(false, 1, 0), HostWait::sparing);  // cores unknown
}

TEST(HostWait, GpuPathPrompt) {
    EXPECT_EQ(host_wait_for(true, 6, 2), HostWait::prompt);
    EXPECT_EQ(host_wait_for(true, 1, 0), HostWait::prompt);
}

// The pauses a wait takes before its `looks`-th look succeeds, with no spin.
std::vector<microseconds> pauses_of(int looks, microseconds longest) {
    std::vector<microseconds> pauses;
    int n = 0;
    const bool done = poll_until(
        [&] { return ++n == looks; }, std::chrono::steady_clock::now() + std::chrono::seconds(10),
        {microseconds(0), longest}, [&](microseconds pause) { pauses.push_back(pause); });
    EXPECT_TRUE(done);
    EXPECT_EQ(n, looks);
    return pauses;
}

TEST(Poll, SparingPausesDoubleToTheLongest) {
    set_host_wait({HostWait::sparing, "test"});
    const std::vector<microseconds> expected = {
        microseconds(10),  microseconds(20),  microseconds(40), microseconds(80),
        microseconds(160), microseconds(300), microseconds(300)};
    EXPECT_EQ(pauses_of(8, microseconds(300)), expected);
}

// A longest pause under the first (10 us) is every pause.
TEST(Poll, NoPauseIsLongerThanTheLongest) {
    set_host_wait({HostWait::sparing, "test"});
    EXPECT_EQ(pauses_of(4, microseconds(5)), std::vector<microseconds>(3, microseconds(5)));
}

// Most waits end within microseconds: for its first `spin` a wait only yields between looks.
TEST(Poll, TheSpinYieldsBeforeAnyPause) {
    int looks = 0, pauses = 0;
    EXPECT_TRUE(poll_until(
        [&] { return ++looks == 50; }, std::chrono::steady_clock::now() + std::chrono::seconds(20),
        {std::chrono::seconds(10), microseconds(1000)}, [&](microseconds) { ++pauses; }));
    EXPECT_EQ(pauses, 0);
}

TEST(Poll, PromptPausesStayShort) {
    set_host_wait({HostWait::prompt, "test"});
    const std::vector<microseconds> pauses = pauses_of(8, microseconds(1000));
    ASSERT_EQ(pauses.size(), 7u);
    for (const microseconds pause : pauses) EXPECT_LE(pause, kPromptPause);
    EXPECT_EQ(pauses.back(), kPromptPause);
    EXPECT_EQ(host_wait().reason, "test");
    set_host_wait({HostWait::sparing, ""});
}

TEST(Poll, GivesUpAtTheDeadline) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(poll_until([] { return false; }, start + std::chrono::milliseconds(20),
                            {microseconds(100), microseconds(1000)}));
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

TEST(Poll, TheFirstLookThatSucceedsEndsIt) {
    int looks = 0;
    EXPECT_TRUE(poll_until([&] { return ++looks == 1; }, std::chrono::steady_clock::now(),
                           {microseconds(100), microseconds(1000)}));
    EXPECT_EQ(looks, 1);
}

}  // namespace
}  // namespace gpurelay
