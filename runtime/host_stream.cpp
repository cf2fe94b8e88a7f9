#include "runtime/host_stream.hpp"

#include <atomic>

#include "runtime/error.hpp"
#include "runtime/nvtx.hpp"

namespace gpurelay {
namespace {
std::atomic<int> live_host_streams{0};
}  // namespace

HostStream::HostStream(std::chrono::milliseconds wait_timeout, std::string label)
    : wait_timeout_(wait_timeout), label_(std::move(label)), worker_([this] { run(); }) {
    ++live_host_streams;
}

int HostStream::live_count() { return live_host_streams.load(); }

HostStream::~HostStream() {
    --live_host_streams;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    worker_.join();
}

void HostStream::enqueue(std::function<void()> op) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(op));
    }
    work_ready_.notify_one();
}

void HostStream::wait(Event& event) {
    auto& host_event = dynamic_cast<HostEvent&>(event);
    // The target is fixed now, as cudaStreamWaitEvent fixes it at the call.
    const std::uint64_t target = host_event.recorded_generation();
    if (target == 0) return;
    enqueue([&host_event, target] { host_event.wait_for(target); });
}

void HostStream::synchronize() {
    std::unique_lock lock(mutex_);
    if (!drained_.wait_for(lock, wait_timeout_, [this] { return queue_.empty() && !busy_; })) {
        throw timeout_error("work on a host stream", wait_timeout_);
    }
    if (failure_) std::rethrow_exception(failure_);
}

void HostStream::run() {
    if (!label_.empty()) nvtx::name_current_thread(label_.c_str());
    std::unique_lock lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        auto op = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        const bool skip = static_cast<bool>(failure_);
        lock.unlock();
        if (!skip) {
            try {
                op();
            } catch (...) {
                // With a handler installed the job ends now, so no peer waits on this stream
                // until its timeout; without one (unit tests), synchronize() rethrows.
                if (fatal_handler() != nullptr) fail_fatally(std::current_exception());
                lock.lock();
                failure_ = std::current_exception();
                lock.unlock();
            }
        }
        lock.lock();
        busy_ = false;
        if (queue_.empty()) drained_.notify_all();
    }
}

void HostEvent::record(Stream& stream) {
    auto& host_stream = dynamic_cast<HostStream&>(stream);
    std::uint64_t generation;
    {
        std::lock_guard lock(mutex_);
        generation = ++recorded_;
    }
    host_stream.enqueue([this, generation] {
        {
            std::lock_guard lock(mutex_);
            if (generation > completed_) {
                completed_ = generation;
                completed_at_ = std::chrono::steady_clock::now();
            }
        }
        reached_.notify_all();
    });
}

std::uint64_t HostEvent::recorded_generation() {
    std::lock_guard lock(mutex_);
    return recorded_;
}

void HostEvent::wait_for(std::uint64_t generation) {
    std::unique_lock lock(mutex_);
    if (!reached_.wait_for(lock, wait_timeout_, [&] { return completed_ >= generation; })) {
        throw timeout_error("work before a host stream event", wait_timeout_);
    }
}

void HostEvent::synchronize() { wait_for(recorded_generation()); }

double HostEvent::elapsed_ms_since(Event& start) {
    const auto completed_at = [](HostEvent& event) {
        std::lock_guard lock(event.mutex_);
        return event.completed_at_;
    };
    const auto begin = completed_at(dynamic_cast<HostEvent&>(start));
    return std::chrono::duration<double, std::milli>(completed_at(*this) - begin).count();
}

}  // namespace gpurelay
