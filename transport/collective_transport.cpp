// The collective slot protocol: run at publish by a broadcast root keeping no copy, else at await.
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

class CollectiveTransport final : public SlotRingTransport {
  public:
    CollectiveTransport(std::unique_ptr<CollectiveCall> call, const PairPlacement& placement,
                        Device& device, const TransportOptions& options)
        : SlotRingTransport(device, placement, options),
          call_(std::move(call)),
          role_(placement.role),
          published_(device, both() ? options.slots : 0),
          read_(device, both() ? options.slots : 0) {}

    std::string name() const override { return call_->name(); }

    // Both sides: the collective reads the send slot on the receive stream; A rewrites it after.
    void* acquire(std::size_t k, Stream& stream) override {
        if (both()) read_.wait(k, stream);
        return send_[k].data();
    }

    void publish(std::size_t k, Stream& stream) override {
        if (both()) {
            published_.record(k, stream);
        } else {
            call_->run(send_[k].data(), nullptr, bytes_, stream);
        }
    }

    const void* await(std::size_t k, Stream& stream) override {
        wait_free(k, stream);
        if (both()) {
            published_.wait(k, stream);
            call_->run(send_[k].data(), recv_[k].data(), bytes_, stream);
            read_.record(k, stream);
        } else {
            call_->run(nullptr, recv_[k].data(), bytes_, stream);
        }
        return recv_[k].data();
    }

    void streams_idle() override {
        SlotRingTransport::streams_idle();
        published_.streams_idle();
        read_.streams_idle();
    }
    void check_health() override { call_->check_health(); }

  private:
    bool both() const { return role_ == Role::both; }

    std::unique_ptr<CollectiveCall> call_;
    Role role_;
    SlotEvents published_;  // both sides: A has written send slot k
    SlotEvents read_;       // both sides: the collective has read send slot k
};

}  // namespace

std::unique_ptr<Transport> make_collective_transport(std::unique_ptr<CollectiveCall> call,
                                                     const PairPlacement& placement, Device& device,
                                                     const TransportOptions& options) {
    return std::make_unique<CollectiveTransport>(std::move(call), placement, device, options);
}

}  // namespace gpurelay
