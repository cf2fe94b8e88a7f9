// Progress marks shared by a staged transport's streams and its MPI proxy thread: per piece of a
// message, the newest ticket (message number) whose piece is done. They are sequence words in host
// memory that a stream sets and holds for itself (on a GPU, its front end); host functions could
// not: CUDA runs them all on one thread, so a relay stage's held receive would hold its own send.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>

#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "runtime/slot_flags.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

class PieceBoard {
  public:
    PieceBoard(Device& device, std::size_t pieces)
        : device_(device), words_(device.allocate_host(pieces * sizeof(std::uint32_t))) {
        // Before any stream or thread can look: every piece is done for ticket 0.
        std::memset(words_.data(), 0, pieces * sizeof(std::uint32_t));
    }

    // From a host thread: piece `piece` of message `ticket` (from 1 up; low 32 bits, wrap-around
    // order) is done. Marks only grow: an older message's late mark takes nothing back.
    void mark(std::uint64_t ticket, std::size_t piece) {
        if (reached(*word(piece), static_cast<std::uint32_t>(ticket))) return;
        store_release(word(piece), static_cast<std::uint32_t>(ticket));
    }
    // Blocks until piece `piece` of message `ticket` is done (ticket 0 always is), or a runtime
    // error naming `what` after `timeout`. A GPU's store wakes no thread: a look is <= 100 us late.
    void wait(std::uint64_t ticket, std::size_t piece, std::chrono::milliseconds timeout,
              const char* what) const {
        if (ticket == 0) return;
        wait_until(word(piece), static_cast<std::uint32_t>(ticket), timeout, what,
                   std::chrono::microseconds(100));
    }

    // The same, on `stream`: the mark after the work before it, the hold before the work after it.
    void mark_on(std::uint64_t ticket, std::size_t piece, Stream& stream) {
        device_.write_word(word(piece), static_cast<std::uint32_t>(ticket), stream);
    }
    void wait_on(std::uint64_t ticket, std::size_t piece, Stream& stream, const char* what) {
        if (ticket == 0) return;
        device_.wait_word(word(piece), static_cast<std::uint32_t>(ticket), stream, what);
    }

  private:
    std::uint32_t* word(std::size_t piece) const {
        return static_cast<std::uint32_t*>(words_.data()) + piece;
    }

    Device& device_;
    Buffer words_;
};

}  // namespace gpurelay
