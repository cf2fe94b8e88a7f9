// Tests only (debug_delay_us): a transport whose receives start late on one rank, so a test can
// make one pair slow without a slow machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include "transport/transport.hpp"

namespace gpurelay {

// Passes every call to `inner`; await() first sleeps `delay` on the host. The sleep falls inside
// the step's receive (the pipeline has marked its start on the receive stream, which then idles
// until the receive is queued), and a large message's send waits for that receive, so both ends
// of this pair's transfer take longer, as over a slow link. A sleep between steps would not do:
// the stop vote keeps every rank's step loop within a step of the others', so it would slow
// every pair alike.
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
