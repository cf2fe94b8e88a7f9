// Completing MPI requests with a deadline: a peer that never answers becomes an error that
// names the operation, instead of a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace gpurelay {

// Waits for `count` requests: MPI_Testall polled (runtime/poll.hpp) with a spin of 200 us (most
// waits end within it, and MPI's progress engine moves large transfers only while called), then
// pauses up to 1 ms under `sparing`, so a long wait leaves a core to the ranks that work. Never
// one long MPI call: under MPI_THREAD_MULTIPLE a thread blocked in MPI_Waitall starves the other
// threads' MPI calls (a stop vote beside the staged transport's proxies waited milliseconds a
// step). A watchdog ends the job through the fatal handler, naming `what`, past `timeout`.
void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what);

// Sends (or receives) the `bytes` at `data` to (from) `peer` over `comm` in pieces of `piece`
// bytes (at most INT_MAX), all of them in flight at once, and waits for them with wait_all: one
// at a time, each piece's handshake would leave MPI idle between pieces. The pieces share tag 0;
// MPI keeps their order between two ranks.
void transfer_pieces(void* data, std::size_t bytes, std::size_t piece, int peer, bool sending,
                     MPI_Comm comm, std::chrono::milliseconds timeout);

// The bound of every wait that is not given its own: timeout_s, set once the deck is read (until
// then timeout_s's default, kDefaultTimeout).
void set_wait_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds wait_timeout();

// Bounds a step that has no request to test (a collective HDF5 create, open, flush or close, a
// barrier, a reduction, an agreement, MPI_Finalize): if this object still lives `timeout` after
// it was made, the watchdog ends the job through the fatal handler, naming `what`. One line per
// wait: `const Deadline bound("the barrier at a pass's end");`.
class Deadline {
  public:
    // Bounded by wait_timeout().
    explicit Deadline(const std::string& what);
    Deadline(std::chrono::milliseconds timeout, const std::string& what);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

  private:
    struct Entry;
    std::unique_ptr<Entry> entry_;
};

}  // namespace gpurelay
