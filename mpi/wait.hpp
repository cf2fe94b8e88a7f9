// MPI waits with a deadline: a silent peer becomes an error naming the wait, not a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace gpurelay {

// MPI_Testall polled (runtime/poll.hpp): a 200 us spin (MPI moves large transfers only while
// called), then pauses up to 1 ms under `sparing`. Never one long MPI call: under
// MPI_THREAD_MULTIPLE a thread blocked in MPI_Waitall starves the other threads' MPI calls (a stop
// vote beside the staged proxies waited ms a step). Past `timeout` the watchdog ends the job.
void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what);

// Sends or receives `bytes` in pieces of `piece` bytes (at most INT_MAX), all in flight at once
// (one at a time, each handshake would leave MPI idle); tag 0, MPI keeps their order.
void transfer_pieces(void* data, std::size_t bytes, std::size_t piece, int peer, bool sending,
                     MPI_Comm comm, std::chrono::milliseconds timeout);

// The bound of every wait that is not given its own: timeout_s, set once the deck is read (until
// then timeout_s's default, kDefaultTimeout).
void set_wait_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds wait_timeout();

// Bounds a step with no request to test (collective HDF5 calls, barriers, MPI_Finalize): alive
// `timeout` after it was made, the watchdog ends the job naming `what`.
class Deadline {
  public:
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
