// Progress marks shared by a staged transport's streams and its MPI proxy thread: for each piece
// of a message, the newest ticket (message number) whose piece is done. The marks are sequence
// words in the device's host memory, so a stream sets them and holds for them itself (on a GPU,
// its front end). Host functions could not: CUDA runs every stream's host functions on one
// thread, so a relay stage's receive, held until its data arrived, would hold its own send.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

class PieceBoard {
  public:
    PieceBoard(Device& device, std::size_t pieces);

    // From a host thread: piece `piece` of message `ticket` is done (tickets start at 1 and only
    // grow; the words keep their low 32 bits, compared in wrap-around order).
    void mark(std::uint64_t ticket, std::size_t piece);
    // Blocks the calling thread until piece `piece` of message `ticket` is done; ticket 0 is
    // always done. Throws a runtime error naming `what` after `timeout`.
    void wait(std::uint64_t ticket, std::size_t piece, std::chrono::milliseconds timeout,
              const char* what) const;

    // The same, queued on `stream`: the mark once the work before it is done, the hold before
    // the work after it.
    void mark_on(std::uint64_t ticket, std::size_t piece, Stream& stream);
    void wait_on(std::uint64_t ticket, std::size_t piece, Stream& stream, const char* what);

  private:
    std::uint32_t* word(std::size_t piece) const;

    Device& device_;
    Buffer words_;
};

}  // namespace gpurelay
