// PieceBoard: the staged transport's per-piece progress marks, set and waited for by its streams
// and its MPI proxy threads.
#include "transport/piece_board.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using std::chrono::milliseconds;

// The CPU path's device: its streams are worker threads, as asynchronous as CUDA streams.
class PieceBoardTest : public ::testing::Test {
  protected:
    std::unique_ptr<Device> device = make_host_device(std::chrono::seconds(10));
};

// Ticket 0 (no message yet) is done whatever a word holds: after 2^31 tickets the words'
// wrap-around order puts 0 ahead of the word, and a wait for it would never end.
TEST_F(PieceBoardTest, TicketZeroIsAlwaysDone) {
    PieceBoard board(*device, 3);
    board.wait(0, 2, milliseconds(0), "nothing");
    board.mark(0x40000000u, 2);
    board.mark(0x80000000u, 2);
    board.wait(0, 2, milliseconds(0), "nothing, with the word half the order away");
}

// The same on a stream: the hold for ticket 0 lets the stream through at once.
TEST_F(PieceBoardTest, TicketZeroIsAlwaysDoneOnAStream) {
    auto quick = make_host_device(milliseconds(100));
    PieceBoard board(*quick, 1);
    board.mark(0x40000000u, 0);
    board.mark(0x80000000u, 0);
    auto stream = quick->make_stream(false, "test");
    board.wait_on(0, 0, *stream, "nothing, with the word half the order away");
    EXPECT_NO_THROW(stream->synchronize());
}

TEST_F(PieceBoardTest, AMarkedPieceIsDoneForItsTicketAndEarlierOnes) {
    PieceBoard board(*device, 2);
    board.mark(3, 1);
    board.wait(3, 1, milliseconds(0), "piece 1 of message 3");
    board.wait(1, 1, milliseconds(0), "piece 1 of message 1");
    // The other piece, and a later message, are not.
    EXPECT_THROW(board.wait(1, 0, milliseconds(1), "piece 0"), Error);
    EXPECT_THROW(board.wait(4, 1, milliseconds(1), "piece 1 of message 4"), Error);
}

TEST_F(PieceBoardTest, MarksOnlyGrow) {
    PieceBoard board(*device, 1);
    board.mark(5, 0);
    board.mark(2, 0);  // a late mark of an older message does not take piece 0 back
    board.wait(5, 0, milliseconds(0), "message 5");
}

TEST_F(PieceBoardTest, AWaitThatOutlastsItsTimeoutIsARuntimeErrorNamingTheWait) {
    PieceBoard board(*device, 1);
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

// The wake-up itself is slot_flags' (tests/runtime/slot_flags_test.cpp): here, that the board's
// marks and waits meet across threads, piece by piece.
TEST_F(PieceBoardTest, MarksFromAnotherThreadReachTheWaiter) {
    PieceBoard board(*device, 4);
    std::thread marker([&] {
        std::this_thread::sleep_for(milliseconds(20));
        for (std::size_t p = 0; p < 4; ++p) board.mark(1, p);
    });
    for (std::size_t p = 0; p < 4; ++p) board.wait(1, p, std::chrono::seconds(10), "a piece");
    marker.join();
}

TEST_F(PieceBoardTest, AStreamHoldsUntilAHostThreadMarksAndItsLaterWorkWaits) {
    PieceBoard board(*device, 2);
    auto stream = device->make_stream(false, "test");
    std::atomic<int> after{0};
    board.wait_on(1, 1, *stream, "piece 1 of message 1");
    device->enqueue_host([&] { after = 1; }, *stream);
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(after.load(), 0) << "the stream went past a piece not yet marked";
    board.mark(1, 1);
    stream->synchronize();
    EXPECT_EQ(after.load(), 1);
}

TEST_F(PieceBoardTest, AStreamMarksOnceTheWorkBeforeItIsDone) {
    PieceBoard board(*device, 1);
    auto stream = device->make_stream(false, "test");
    std::atomic<int> before{0};
    device->enqueue_host(
        [&] {
            std::this_thread::sleep_for(milliseconds(30));
            before = 1;
        },
        *stream);
    board.mark_on(7, 0, *stream);
    board.wait(7, 0, std::chrono::seconds(10), "message 7");
    EXPECT_EQ(before.load(), 1) << "the mark came before the work queued ahead of it";
}

TEST_F(PieceBoardTest, AStreamHoldThatOutlastsTheTimeoutFailsTheStreamNamingTheWait) {
    auto quick = make_host_device(milliseconds(50));
    PieceBoard board(*quick, 1);
    auto stream = quick->make_stream(false, "test");
    board.wait_on(1, 0, *stream, "MPI receive");
    // Past the hold's bound, so that the stream is drained and keeps the hold's own failure.
    std::this_thread::sleep_for(milliseconds(200));
    try {
        stream->synchronize();
        FAIL() << "no timeout";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("MPI receive"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace gpurelay
