#include "transport/piece_board.hpp"

#include <cstring>

#include "runtime/slot_flags.hpp"

namespace gpurelay {
namespace {

// On a GPU the stream writes the words a proxy waits for, and a store there wakes no thread: a
// proxy's look comes at most this late after the copy of a piece.
constexpr std::chrono::microseconds kLongestPause(100);

}  // namespace

PieceBoard::PieceBoard(Device& device, std::size_t pieces)
    : device_(device), words_(device.allocate_host(pieces * sizeof(std::uint32_t))) {
    // Before any stream or thread can look: every piece is done for ticket 0.
    std::memset(words_.data(), 0, pieces * sizeof(std::uint32_t));
}

std::uint32_t* PieceBoard::word(std::size_t piece) const {
    return static_cast<std::uint32_t*>(words_.data()) + piece;
}

void PieceBoard::mark(std::uint64_t ticket, std::size_t piece) {
    // Marks only grow: a late mark of an older message does not take the piece back.
    if (reached(*word(piece), static_cast<std::uint32_t>(ticket))) return;
    store_release(word(piece), static_cast<std::uint32_t>(ticket));
}

void PieceBoard::wait(std::uint64_t ticket, std::size_t piece, std::chrono::milliseconds timeout,
                      const char* what) const {
    if (ticket == 0) return;
    wait_until(word(piece), static_cast<std::uint32_t>(ticket), timeout, what, kLongestPause);
}

void PieceBoard::mark_on(std::uint64_t ticket, std::size_t piece, Stream& stream) {
    device_.write_word(word(piece), static_cast<std::uint32_t>(ticket), stream);
}

void PieceBoard::wait_on(std::uint64_t ticket, std::size_t piece, Stream& stream,
                         const char* what) {
    if (ticket == 0) return;
    device_.wait_word(word(piece), static_cast<std::uint32_t>(ticket), stream, what);
}

}  // namespace gpurelay
