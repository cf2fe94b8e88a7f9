// PieceBoard: the staged transport's per-piece progress marks, shared by stream-side host
// functions and the MPI proxy threads.
#include "comm/piece_board.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using std::chrono::milliseconds;

TEST(PieceBoard, TicketZeroIsAlwaysDone) {
    PieceBoard board(3);
    board.wait(0, 2, milliseconds(0), "nothing");
}

TEST(PieceBoard, AMarkedPieceIsDoneForItsTicketAndEarlierOnes) {
    PieceBoard board(2);
    board.mark(3, 1);
    board.wait(3, 1, milliseconds(0), "piece 1 of message 3");
    board.wait(1, 1, milliseconds(0), "piece 1 of message 1");
    // The other piece, and a later message, are not.
    EXPECT_THROW(board.wait(1, 0, milliseconds(1), "piece 0"), Error);
    EXPECT_THROW(board.wait(4, 1, milliseconds(1), "piece 1 of message 4"), Error);
}

TEST(PieceBoard, MarksOnlyGrow) {
    PieceBoard board(1);
    board.mark(5, 0);
    board.mark(2, 0);  // a late mark of an older message does not take piece 0 back
    board.wait(5, 0, milliseconds(0), "message 5");
}

TEST(PieceBoard, AWaitThatOutlastsItsTimeoutIsARuntimeErrorNamingTheWait) {
    PieceBoard board(1);
    const auto start = std::chrono::steady_clock::now();
    try {
        board.wait(1, 0, milliseconds(50), "the staging copy");
        FAIL() << "no timeout";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ExitCode::runtime);
        EXPECT_NE(std::string(e.what()).find("the staging copy"), std::string::npos) << e.what();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));
}

TEST(PieceBoard, AMarkFromAnotherThreadWakesTheWaiter) {
    PieceBoard board(4);
    std::thread marker([&] {
        std::this_thread::sleep_for(milliseconds(20));
        for (std::size_t p = 0; p < 4; ++p) board.mark(1, p);
    });
    for (std::size_t p = 0; p < 4; ++p) board.wait(1, p, std::chrono::seconds(10), "a piece");
    marker.join();
}

}  // namespace
}  // namespace gpurelay
