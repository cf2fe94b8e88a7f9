// A relay's middle stage (transport.hpp): B writes the outgoing slot on one stream, the send reads
// it on another; each link keeps its own reuse rule.
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

class RelayTransport final : public Transport {
  public:
    RelayTransport(std::unique_ptr<Transport> inbound, std::unique_ptr<Transport> outbound,
                   Device& device, std::size_t slots)
        : inbound_(std::move(inbound)), outbound_(std::move(outbound)), sent_(device, slots) {}

    std::string name() const override { return outbound_->name(); }

    // B writes slot k on the compute stream; its previous send may read it on the producer stream:
    // the write waits for that send, then the link's reuse rule (ipc in place: the next release).
    void* acquire(std::size_t k, Stream& stream) override {
        sent_.wait(k, stream);
        return outbound_->acquire(k, stream);
    }
    void publish(std::size_t k, Stream& stream) override {
        outbound_->publish(k, stream);
        sent_.record(k, stream);
    }
    const void* await(std::size_t k, Stream& stream) override { return inbound_->await(k, stream); }
    void release(std::size_t k, Stream& stream) override { inbound_->release(k, stream); }
    bool receive_waits() const override { return inbound_->receive_waits(); }
    void streams_idle() override {
        inbound_->streams_idle();
        outbound_->streams_idle();
        sent_.streams_idle();
    }
    void set_tensor_bytes(std::size_t bytes) override {
        inbound_->set_tensor_bytes(bytes);
        outbound_->set_tensor_bytes(bytes);
    }
    void check_health() override {
        inbound_->check_health();
        outbound_->check_health();
    }

  private:
    // In link order, so every stage tears its outbound link down first: a teardown collective
    // over a link's two ranks (ipc's window) never waits on a stage busy further up the line.
    std::unique_ptr<Transport> inbound_, outbound_;
    SlotEvents sent_;  // recorded after each send of a slot
};

}  // namespace

std::unique_ptr<Transport> make_relay_transport(std::unique_ptr<Transport> inbound,
                                                std::unique_ptr<Transport> outbound, Device& device,
                                                std::size_t slots) {
    return std::make_unique<RelayTransport>(std::move(inbound), std::move(outbound), device, slots);
}

}  // namespace gpurelay
