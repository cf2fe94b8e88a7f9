#include "comm/piece_board.hpp"

#include "runtime/error.hpp"

namespace gpurelay {

void PieceBoard::mark(std::uint64_t ticket, std::size_t piece) {
    {
        std::lock_guard lock(mutex_);
        if (ticket > done_[piece]) done_[piece] = ticket;
    }
    changed_.notify_all();
}

void PieceBoard::wait(std::uint64_t ticket, std::size_t piece, std::chrono::milliseconds timeout,
                      const char* what) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return done_[piece] >= ticket; })) {
        throw timeout_error(what, timeout);
    }
}

}  // namespace gpurelay
