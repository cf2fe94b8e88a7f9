// Tests only (debug_delay_us): a transport whose receives start late on one rank, so a test can
// make one pair slow without a slow machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include "transport/transport.hpp"

namespace gpurelay {

// Passes every call to `inner`; await() first sleeps `delay` on the host, inside the step's
// receive, which a large message's send waits for: both ends of this pair's transfer take longer,
// as over a slow link. (A sleep between steps would slow every pair alike: the stop vote keeps
// the ranks' step loops within a step of each other.)
class DelayedTransport final : public Transport {
  public:
    DelayedTransport(Transport& inner, std::chrono::microseconds delay)
        : inner_(inner), delay_(delay) {}
    std::string name() const override { return inner_.name(); }
    void* acquire(std::size_t k, Stream& stream) override { return inner_.acquire(k, stream); }
    void publish(std::size_t k, Stream& stream) override { inner_.publish(k, stream); }
    const void* await(std::size_t k, Stream& stream) override {
        if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
        return inner_.await(k, stream);
    }
    void release(std::size_t k, Stream& stream) override { inner_.release(k, stream); }
    bool receive_waits() const override { return inner_.receive_waits(); }
    void streams_idle() override { inner_.streams_idle(); }
    void set_tensor_bytes(std::size_t bytes) override { inner_.set_tensor_bytes(bytes); }
    void check_health() override { inner_.check_health(); }
    SlotFlags* slot_flags(Role side) override { return inner_.slot_flags(side); }

  private:
    Transport& inner_;
    std::chrono::microseconds delay_;
};

}  // namespace gpurelay
