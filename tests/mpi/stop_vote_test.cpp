// The stop vote under mpirun -np 1 and 2: the cadence's rule; no signal, no stop, and a vote only
// every cadence; a rank that pauses sets every rank's cadence alike; a signal on one
// rank stops every rank after the same step, within two cadences; a relay's lag is the shortest
// cadence; the vote left in flight completes when the vote goes away.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include "mpi/stop_request.hpp"
#include "mpi_test.hpp"

namespace gpurelay {
namespace {

constexpr std::chrono::milliseconds kTimeout{30000};
// Each test step lasts at least this: under the rule's 1 ms / 128 steps, so that the cadence
// is 128 steps.
constexpr std::chrono::microseconds kStep{20};

// Every rank's value of `mine`, gathered onto every rank.
std::vector<std::int64_t> everyone(std::int64_t mine) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(test::world_size()));
    MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    return all;
}

TEST(StopVote, TheCadenceIsAtLeast128StepsAMillisecondAndTheLagAndAtMostHalfASecond) {
    EXPECT_EQ(StopVote::cadence_for(0.1, 1), 128);     // 128 steps last 12.8 ms
    EXPECT_EQ(StopVote::cadence_for(0.001, 1), 1000);  // a millisecond of 1 us steps
    EXPECT_EQ(StopVote::cadence_for(10.0, 1), 50);     // half a second of 10 ms steps
    EXPECT_EQ(StopVote::cadence_for(2000.0, 1), 1);    // steps longer than half a second
    EXPECT_EQ(StopVote::cadence_for(10.0, 200), 200);  // a relay of 200 stages
    EXPECT_GE(StopVote::cadence_for(0.0, 1), 1000000);
}

TEST(StopVote, WithoutASignalNoRankStopsAndTheRanksVoteOnlyEveryCadence) {
    StopVote vote(MPI_COMM_WORLD, kTimeout);
    constexpr int kSteps = 1000;
    for (int step = 0; step < kSteps; ++step) {
        std::this_thread::sleep_for(kStep);
        ASSERT_EQ(vote.after_step(), 0) << "step " << step;
    }
    // Cadences of 1, 2, 4, ... 64 steps (8 votes), then one vote every 128 steps.
    EXPECT_LE(vote.votes(), 8 + kSteps / 128 + 1);
    EXPECT_EQ(vote.cadence(), 128);
    for (const std::int64_t votes : everyone(vote.votes())) EXPECT_EQ(votes, vote.votes());
    // The destructor completes the vote still in flight (every rank has posted it).
}

// Each rank's cadence comes from the slowest rank's time per step, as the vote returned it to
// every rank. Rank 0 pauses 600 ms once: its own clock puts the pause in one cadence, the
// others' clocks (waiting for its vote) in the next, yet every rank votes after the same steps.
TEST(StopVote, ARankThatPausesSetsTheCadenceOfEveryRank) {
    StopVote vote(MPI_COMM_WORLD, kTimeout);
    std::int64_t vote_steps = 0, shortest = 1 << 30;  // a sum of the steps that posted votes
    for (int step = 0; step < 700; ++step) {
        std::this_thread::sleep_for(kStep);
        if (step == 300 && test::world_rank() == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(600));
        }
        const std::int64_t before = vote.votes();
        ASSERT_EQ(vote.after_step(), 0);
        if (vote.votes() != before) vote_steps += step;
        if (step > 300) shortest = std::min(shortest, vote.cadence());
    }
    // 600 ms over 128 steps: half a second of those steps is under 128 of them.
    EXPECT_LT(shortest, 128);
    for (const std::int64_t c : everyone(shortest)) EXPECT_EQ(c, shortest);
    for (const std::int64_t s : everyone(vote_steps)) EXPECT_EQ(s, vote_steps);
}

// Between votes the vote in flight is looked at, so that MPI moves it on although nothing else
// here calls MPI (as NCCL's steps do not): a vote returns before its wait at the next vote, which
// without the looks none could. (Not every vote must: a rank descheduled for a whole cadence on a
// loaded machine has not cast it yet, and is waited for.)
TEST(StopVote, TheVoteInFlightReturnsBeforeTheNextVote) {
    StopVote vote(MPI_COMM_WORLD, kTimeout);
    int returned_early = 0, read = 0;
    for (int step = 0; step < 600; ++step) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const std::int64_t before = vote.votes();
        const bool returned = vote.vote_returned();
        ASSERT_EQ(vote.after_step(), 0);
        // A vote with a cadence of many steps behind it (the 6th and later), read at this step.
        if (vote.votes() != before && before >= 5) {
            ++read;
            returned_early += returned ? 1 : 0;
        }
    }
    EXPECT_GE(read, 2);
    EXPECT_GT(returned_early, 0);
}

// The vote's destructor completes the vote left in flight before the communicator goes: rank 0
// posts the first vote and goes at once, the last rank casts its own 200 ms later. Rank 0's
// destructor returns only after that cast (the ranks share the node's steady clock).
TEST(StopVote, TheVoteLeftInFlightCompletesBeforeTheVoteGoesAway) {
    const auto now_ns = [] {
        return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now().time_since_epoch())
                                             .count());
    };
    std::int64_t cast_at = 0;
    {
        StopVote vote(MPI_COMM_WORLD, kTimeout);
        if (test::world_rank() == test::world_size() - 1) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            cast_at = now_ns();
        }
        ASSERT_EQ(vote.after_step(), 0);  // the first step posts the first vote
        EXPECT_EQ(vote.votes(), 1);
    }
    const std::int64_t gone_at = now_ns();
    std::int64_t last_cast = 0;
    MPI_Allreduce(&cast_at, &last_cast, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_GE(gone_at, last_cast) << "the vote went away before the last rank had cast its part";
}

TEST(StopSignal, EachStopSignalHasItsNameAndExitsWith128PlusItsNumber) {
    EXPECT_STREQ(stop_signal_name(SIGTERM), "SIGTERM");
    EXPECT_STREQ(stop_signal_name(SIGINT), "SIGINT");
    EXPECT_STREQ(stop_signal_name(SIGUSR1), "SIGUSR1");
    for (const int signal : {SIGTERM, SIGINT, SIGUSR1}) {
        EXPECT_EQ(static_cast<int>(stopped_exit_code(signal)), 128 + signal) << signal;
    }
}

// The last test: the signal, once recorded, stays.
TEST(StopVote, ASignalOnTheLastRankStopsEveryRankAfterTheSameStep) {
    install_stop_handlers();
    const bool signalled = test::world_rank() == test::world_size() - 1;
    StopVote vote(MPI_COMM_WORLD, kTimeout);
    int stopped_after = -1, agreed = 0;
    for (int step = 0; step < 1000 && stopped_after < 0; ++step) {
        std::this_thread::sleep_for(kStep);
        if (signalled && step == 3) std::raise(SIGTERM);
        agreed = vote.after_step();
        if (agreed != 0) stopped_after = step;
    }
    EXPECT_EQ(agreed, SIGTERM);
    // Votes after steps 0, 1, 3 and 7 (cadences of 1, 2, 4): the signal, raised before step 3's
    // vote, rides it and returns with the next.
    EXPECT_EQ(stopped_after, 7);
    for (const std::int64_t s : everyone(stopped_after)) EXPECT_EQ(s, stopped_after);
    EXPECT_EQ(stop_signal(), signalled ? SIGTERM : 0);
    // Once agreed, the answer stays: a pass that ends on the agreed step stops the next.
    EXPECT_EQ(vote.after_step(), SIGTERM);

    // A relay's lag of 300 steps is the shortest cadence: the signal, already recorded, rides
    // the first vote (after step 0) and returns with the second, after step 300, on every rank.
    StopVote lagging(MPI_COMM_WORLD, kTimeout, 300);
    stopped_after = -1;
    for (int step = 0; step < 1000 && stopped_after < 0; ++step) {
        if (lagging.after_step() != 0) stopped_after = step;
    }
    EXPECT_EQ(stopped_after, 300);
    for (const std::int64_t s : everyone(stopped_after)) EXPECT_EQ(s, stopped_after);
}

}  // namespace
}  // namespace gpurelay
