// The stop vote under mpirun -np 1 and 2: no signal, no stop; a signal on one rank stops every
// rank after the same step; the vote left in flight completes when the vote goes away.
#include "comm/stop_request.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <vector>

#include "mpi_test.hpp"

namespace gpurelay {
namespace {

constexpr std::chrono::milliseconds kTimeout{30000};

TEST(StopVote, WithoutASignalNoRankStops) {
    StopVote vote(MPI_COMM_WORLD, kTimeout);
    for (int step = 0; step < 20; ++step) EXPECT_EQ(vote.after_step(), 0) << "step " << step;
    // The destructor completes the vote still in flight (every rank has posted it).
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
    for (int step = 0; step < 10 && stopped_after < 0; ++step) {
        if (signalled && step == 3) std::raise(SIGTERM);
        agreed = vote.after_step();
        if (agreed != 0) stopped_after = step;
    }
    EXPECT_EQ(agreed, SIGTERM);
    // Raised before step 3's vote, which carries it; the answer lags by one step.
    EXPECT_EQ(stopped_after, 4);
    std::vector<int> all(static_cast<std::size_t>(test::world_size()));
    MPI_Allgather(&stopped_after, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int s : all) EXPECT_EQ(s, stopped_after);
    EXPECT_EQ(stop_signal(), signalled ? SIGTERM : 0);

    // With three votes in flight the answer lags by three steps: the signal, already recorded,
    // rides step 0's vote and comes back after step 3, alike on every rank.
    StopVote lagging(MPI_COMM_WORLD, kTimeout, 3);
    stopped_after = -1;
    for (int step = 0; step < 10 && stopped_after < 0; ++step) {
        if (lagging.after_step() != 0) stopped_after = step;
    }
    EXPECT_EQ(stopped_after, 3);
    MPI_Allgather(&stopped_after, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int s : all) EXPECT_EQ(s, stopped_after);
}

}  // namespace
}  // namespace gpurelay
