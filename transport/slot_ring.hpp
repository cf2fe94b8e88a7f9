// What the transports that move bytes between their own buffers share (private to transport/): the
// send and receive slots of a rank's role(s), and the ordering events between its streams.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mpi/pairing.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "transport/transport.hpp"

namespace gpurelay {

// One ordering event per slot, recorded on one stream and waited on by another. A wait names only
// a record made since the streams were last idle (streams_idle), as a capture may wait only on
// its own records and its records mark nothing outside it; without one, every earlier record has
// been reached and there is nothing to wait for.
class SlotEvents {
  public:
    SlotEvents() = default;
    SlotEvents(Device& device, std::size_t slots) : recorded_(slots, false) {
        for (std::size_t k = 0; k < slots; ++k) {
            events_.push_back(device.make_event(EventUse::ordering));
        }
    }
    void record(std::size_t k, Stream& stream) {
        events_[k]->record(stream);
        recorded_[k] = true;
    }
    void wait(std::size_t k, Stream& stream) {
        if (recorded_[k]) stream.wait(*events_[k]);
    }
    void streams_idle() { recorded_.assign(recorded_.size(), false); }

  private:
    std::vector<std::unique_ptr<Event>> events_;
    std::vector<bool> recorded_;
};

// Fills each of `slots` (`bytes` each) with 0xff (NaN in either float type) and waits for it, so
// that a read of a slot that nothing has written is a mismatch rather than a stale right answer.
inline void poison(Device& device, const std::vector<void*>& slots, std::size_t bytes) {
    if (slots.empty()) return;
    auto stream = device.make_stream(false, "slot poisoning");
    for (void* slot : slots) device.fill_async(slot, 0xff, bytes, *stream);
    stream->synchronize();
}

// A tensor of `bytes` must fit the slots (`capacity` bytes each) made for the run's largest.
inline void check_tensor_bytes(std::size_t bytes, std::size_t capacity) {
    if (bytes > capacity) {
        throw runtime_error("transport: a tensor of " + std::to_string(bytes) +
                            " bytes does not fit its slots of " + std::to_string(capacity));
    }
}

// A rank's slots: `slots` send buffers when it produces, as many receive buffers when it
// consumes, and the consumer's reuse rule: a receive into slot k is queued after the release of
// its previous use (`free`).
struct SlotRing {
    SlotRing(Device& device, Role role, std::size_t slots, std::size_t bytes, bool skip_reuse_wait)
        : free(device, slots),
          device_(device),
          capacity_(bytes),
          skip_reuse_wait_(skip_reuse_wait) {
        for (std::size_t k = 0; k < slots; ++k) {
            if (role != Role::consumer) send.push_back(device.allocate(bytes));
            if (role != Role::producer) recv.push_back(device.allocate(bytes));
        }
        resize(bytes);
    }
    // The tensors from now on are `bytes` long (at most a slot's), and the receive slots are
    // poisoned again: a step of a new size cannot pass on what a step of the last size left.
    std::size_t resize(std::size_t bytes) {
        check_tensor_bytes(bytes, capacity_);
        std::vector<void*> landing;
        for (const Buffer& slot : recv) landing.push_back(slot.data());
        poison(device_, landing, bytes);
        return bytes;
    }
    // Queued on `stream` before slot k is written again: its last reader is done.
    void wait_free(std::size_t k, Stream& stream) {
        if (!skip_reuse_wait_) free.wait(k, stream);
    }

    std::vector<Buffer> send, recv;
    SlotEvents free;  // recorded by release, after the slot's last reader

  private:
    Device& device_;
    std::size_t capacity_;  // bytes a slot holds
    bool skip_reuse_wait_;
};

// A transport that moves each tensor (`bytes_` long) between its own slots, what such transports
// do alike: A writes the send slot, a release lets the receive slot be written again.
class SlotRingTransport : public Transport {
  public:
    SlotRingTransport(Device& device, const PairPlacement& placement,
                      const TransportOptions& options)
        : bytes_(options.slot_bytes),
          slots_(device, placement.role, options.slots, options.slot_bytes,
                 options.debug_skip_reuse_wait) {}

    void* acquire(std::size_t k, Stream&) override { return slots_.send[k].data(); }
    void release(std::size_t k, Stream& stream) override { slots_.free.record(k, stream); }
    bool receive_waits() const override { return false; }
    void streams_idle() override { slots_.free.streams_idle(); }
    void set_tensor_bytes(std::size_t bytes) override { bytes_ = slots_.resize(bytes); }

  protected:
    std::size_t bytes_;  // each tensor's (stream threads read it only while queued work runs)
    SlotRing slots_;
};

}  // namespace gpurelay
