// The CPU path's streams: a worker thread runs queued operations in order, so the CPU path has the
// same asynchrony as CUDA streams and a missing wait corrupts data instead of passing by luck.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/stream.hpp"
#include "runtime/timeout.hpp"

namespace gpurelay {

class HostStream final : public Stream {
  public:
    // `wait_timeout` bounds how long a queued wait may hold before the run is declared stuck;
    // `label`, when not empty, names the worker thread in profiles (as CUDA streams are named).
    explicit HostStream(std::chrono::milliseconds wait_timeout = kDefaultTimeout,
                        std::string label = {});
    ~HostStream() override;
    HostStream(const HostStream&) = delete;
    HostStream& operator=(const HostStream&) = delete;

    Backend backend() const override { return Backend::host; }
    void wait(Event& event) override;
    void synchronize() override;

    // Queues `op` on this stream's thread; an exception skips later ops, synchronize() rethrows it.
    void enqueue(std::function<void()> op);

    // How many host streams (worker threads) this process has now, held against the cores.
    static int live_count();

  private:
    void run();

    std::chrono::milliseconds wait_timeout_;
    std::string label_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable drained_;
    std::deque<std::function<void()>> queue_;
    bool busy_ = false;
    bool stopping_ = false;
    std::exception_ptr failure_;
    std::thread worker_;
};

class HostEvent final : public Event {
  public:
    explicit HostEvent(std::chrono::milliseconds wait_timeout = kDefaultTimeout)
        : wait_timeout_(wait_timeout) {}
    void record(Stream& stream) override;
    void synchronize() override;
    double elapsed_ms_since(Event& start) override;

    // The generation the latest record() will reach; a wait taken now targets this.
    std::uint64_t recorded_generation();
    // Blocks the calling thread until `generation` is reached; throws after the wait timeout.
    void wait_for(std::uint64_t generation);

  private:
    std::chrono::milliseconds wait_timeout_;
    std::mutex mutex_;
    std::condition_variable reached_;
    std::uint64_t recorded_ = 0;
    std::uint64_t completed_ = 0;
    std::chrono::steady_clock::time_point completed_at_{};
};

}  // namespace gpurelay
