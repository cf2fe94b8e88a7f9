// exchange_fd under mpirun -np 2: each rank puts its own text in an anonymous file (memfd), sends
// its descriptor to the other, and reads the peer's text through the descriptor it received,
// after the peer has closed its own: the descriptor, not a name, crossed between the processes.
#include "transport/fd_exchange.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "mpi_test.hpp"

namespace gpurelay {
namespace {

constexpr std::chrono::milliseconds kTimeout{20000};

std::string text_of(int rank, int round) {
    return "rank " + std::to_string(rank) + ", round " + std::to_string(round);
}

// An anonymous file holding `text`.
int file_holding(const std::string& text) {
    const int fd = memfd_create("fd_exchange_test", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    return fd;
}

std::string read_all(int fd) {
    char buffer[128] = {};
    const ssize_t got = pread(fd, buffer, sizeof buffer, 0);
    return got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string();
}

TEST(FdExchange, EachRankReadsThePeersFileThroughTheDescriptorItReceived) {
    if (test::world_size() != 2) GTEST_SKIP() << "needs 2 ranks";
    const int me = test::world_rank();
    const int peer = 1 - me;
    // Several rounds: each listens under a name of its own.
    for (int round = 0; round < 3; ++round) {
        const int mine = file_holding(text_of(me, round));
        const int theirs = exchange_fd(MPI_COMM_WORLD, peer, mine, kTimeout);
        close(mine);
        MPI_Barrier(MPI_COMM_WORLD);  // both have closed their own before reading the peer's
        ASSERT_GE(theirs, 0);
        EXPECT_NE(theirs, mine);
        EXPECT_EQ(read_all(theirs), text_of(peer, round));
        close(theirs);
    }
}

}  // namespace
}  // namespace gpurelay
