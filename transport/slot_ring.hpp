// What transport/'s files share (private to it): the slots of the transports that move bytes
// between their own buffers, the ordering events between a rank's streams, the collectives' check.
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
// a record made since the streams were last idle (streams_idle), as a capture may wait only on its
// own records; before it, every record has been reached and there is nothing to wait for.
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

// The sides a collective is given (transport.hpp says what they mean) must suit `op` and this rank
// (`root`: rank 0 of the group), or a runtime error: the MPI and NCCL collectives refuse alike.
inline void check_collective_sides(Collective op, bool root, const void* send, const void* recv) {
    const bool sides_fit = op == Collective::allreduce
                               ? send != nullptr && recv != nullptr
                               : (root ? send != nullptr : send == nullptr && recv != nullptr);
    if (!sides_fit) {
        throw runtime_error("a " + std::string(to_string(op)) +
                            " call got the wrong sides for this rank");
    }
}

// A transport that moves each tensor (`bytes_` long) between its own slots: `slots` send buffers
// when the rank produces, which A writes, as many receive buffers when it consumes, and the
// consumer's reuse rule: a receive into slot k is queued after the release of its previous use.
class SlotRingTransport : public Transport {
  public:
    SlotRingTransport(Device& device, const PairPlacement& placement,
                      const TransportOptions& options)
        : bytes_(options.slot_bytes),
          options_(options),
          peer_(placement.peer),
          device_(device),
          free_(device, options.slots) {
        for (std::size_t k = 0; k < options.slots; ++k) {
            if (placement.role != Role::consumer) send_.push_back(device.allocate(bytes_));
            if (placement.role != Role::producer) recv_.push_back(device.allocate(bytes_));
        }
        SlotRingTransport::set_tensor_bytes(bytes_);
    }

    void* acquire(std::size_t k, Stream&) override { return send_[k].data(); }
    void release(std::size_t k, Stream& stream) override { free_.record(k, stream); }
    bool receive_waits() const override { return false; }
    void streams_idle() override { free_.streams_idle(); }
    // Poisoned again: a step of a new size cannot pass on what a step of the last size left.
    void set_tensor_bytes(std::size_t bytes) override {
        check_tensor_bytes(bytes, options_.slot_bytes);
        std::vector<void*> landing;
        for (const Buffer& slot : recv_) landing.push_back(slot.data());
        poison(device_, landing, bytes);
        bytes_ = bytes;
    }

  protected:
    // Queued on `stream` before receive slot k is written again: its last reader is done.
    void wait_free(std::size_t k, Stream& stream) {
        if (!options_.debug_skip_reuse_wait) free_.wait(k, stream);
    }

    std::size_t bytes_;  // each tensor's (stream threads read it only while queued work runs)
    TransportOptions options_;
    int peer_;
    Device& device_;
    std::vector<Buffer> send_, recv_;

  private:
    SlotEvents free_;  // recorded by release, after the slot's last reader
};

}  // namespace gpurelay
