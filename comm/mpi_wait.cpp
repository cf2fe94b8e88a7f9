#include "comm/mpi_wait.hpp"

#include <algorithm>
#include <thread>

#include "runtime/error.hpp"

namespace gpurelay {

void wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout,
              const std::string& what) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + timeout;
    auto pause = std::chrono::microseconds(0);
    for (;;) {
        int done = 0;
        MPI_CHECK(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE));
        if (done) return;
        if (clock::now() > deadline) {
            throw runtime_error(what + " did not complete within " +
                                std::to_string(timeout.count() / 1000) +
                                " s (timeout_s): the peer stopped or is stuck");
        }
        // Spin briefly for latency, then back off to at most 1 ms between polls.
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
        pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
    }
}

}  // namespace gpurelay
