// Completing MPI requests with a deadline: a peer that never answers becomes an error that
// names the operation, instead of a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>

namespace gpurelay {

// Waits for `count` requests: MPI_Testall, yielding the CPU between calls. The thread keeps MPI's
// progress engine running (polling with pauses in between starves large transfers), yet never
// sits inside one long MPI call: under MPI_THREAD_MULTIPLE a thread blocked in MPI_Waitall
// starves the MPI calls of the process's other threads (a stop vote beside the staged
// transport's proxies waited milliseconds a step). A watchdog thread ends the job through the
// fatal handler, naming `what`, if the wait outlasts `timeout`.
void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what);

// Bounds a step that has no request to test (a collective HDF5 create, open, flush or close, an
// agreement): if this object still lives `timeout` after it was made, the watchdog ends the job
// through the fatal handler, naming `what`.
class Deadline {
  public:
    Deadline(std::chrono::milliseconds timeout, const std::string& what);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

  private:
    struct Entry;
    std::unique_ptr<Entry> entry_;
};

}  // namespace gpurelay
