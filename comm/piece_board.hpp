// Progress marks shared by a staged transport's stream-side host functions and its MPI proxy
// thread: for each piece of a message, the newest ticket (message number) whose piece is done.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gpurelay {

class PieceBoard {
  public:
    explicit PieceBoard(std::size_t pieces) : done_(pieces, 0) {}

    // Piece `piece` of message `ticket` is done (tickets start at 1 and only grow).
    void mark(std::uint64_t ticket, std::size_t piece);
    // Blocks until piece `piece` of message `ticket` is done; ticket 0 is always done. Throws a
    // runtime error naming `what` after `timeout`.
    void wait(std::uint64_t ticket, std::size_t piece, std::chrono::milliseconds timeout,
              const char* what);

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::uint64_t> done_;
};

}  // namespace gpurelay
