// The ipc transport: the producer copies straight into its consumer's receive slot (copy engine;
// memcpy on the CPU path), or A writes it (ipc_engine = "sm"); the slots' flags order their uses
// across processes, each wait and signal queued on a stream: the host never waits for the peer.
#include <new>
#include <vector>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "transport/ipc_memory.hpp"
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

class IpcTransport final : public Transport {
  public:
    IpcTransport(std::unique_ptr<IpcMemory> memory, const PairPlacement& placement, Device& device,
                 const TransportOptions& options)
        : memory_(std::move(memory)),
          device_(device),
          options_(options),
          bytes_(options.slot_bytes),
          // In pinned memory: the device's roles store their counts back there (slot_flags).
          flags_(device.allocate_host(2 * sizeof(SlotFlags))) {
        // A's own slots, which the copy reads; with produce_in_place A writes the consumer's.
        for (std::size_t k = 0; k < options.slots; ++k) {
            if (placement.role != Role::consumer && !options.produce_in_place) {
                own_.push_back(device.allocate(options.slot_bytes));
            }
            if (placement.role != Role::producer) landing_.push_back(memory_->slot(k));
        }
        if (placement.role != Role::consumer) producer_ = side(false);
        if (placement.role != Role::producer) consumer_ = side(true);
        poison(device, landing_, options.slot_bytes);
    }

    std::string name() const override {
        return std::string(options_.produce_in_place ? "ipc sm" : "ipc") + " (" + memory_->link() +
               ")";
    }

    // In place A writes the consumer's slot, so waits for its release; a copy waits at publish.
    void* acquire(std::size_t k, Stream& stream) override {
        if (!options_.produce_in_place) return own_[k].data();
        wait_for_release(k, stream);
        return memory_->slot(k);
    }

    void publish(std::size_t k, Stream& stream) override {
        if (!options_.produce_in_place) {
            wait_for_release(k, stream);
            memory_->copy(memory_->slot(k), own_[k].data(), bytes_, stream);
        }
        device_.write_word(producer_->outbound[k], producer_->next(k), stream);
    }

    const void* await(std::size_t k, Stream& stream) override {
        memory_->wait_word(consumer_->inbound[k], consumer_->expected(k), stream,
                           "ipc: waiting for the producer's copy");
        return memory_->slot(k);
    }

    void release(std::size_t k, Stream& stream) override {
        device_.write_word(consumer_->outbound[k], consumer_->next(k), stream);
    }

    // Only in place can kernels run every step of the protocol; a copy is the host's to queue.
    SlotFlags* slot_flags(Role side) override {
        if (!options_.produce_in_place) return nullptr;
        return side == Role::producer ? producer_ : consumer_;
    }

    bool receive_waits() const override { return true; }
    // The flags count each slot's uses, so no wait depends on what was recorded before.
    void streams_idle() override {}
    // Between passes: the producer writes again only after the next pass's opening barrier.
    void set_tensor_bytes(std::size_t bytes) override {
        check_tensor_bytes(bytes, options_.slot_bytes);
        poison(device_, landing_, bytes);
        bytes_ = bytes;
    }

  private:
    // The flags of one side, with no use yet, in their place in flags_.
    SlotFlags* side(bool consumer) {
        auto* flags = new (static_cast<SlotFlags*>(flags_.data()) + (consumer ? 1 : 0)) SlotFlags{};
        flags->slots = static_cast<std::uint32_t>(options_.slots);
        flags->ahead = consumer ? 1 : 0;
        flags->reuse_wait = !options_.debug_skip_reuse_wait;
        for (std::uint32_t k = 0; k < flags->slots; ++k) {
            flags->slot[k] = memory_->slot(k);
            flags->inbound[k] = consumer ? memory_->arrived(k) : memory_->released(k);
            flags->outbound[k] = consumer ? memory_->released(k) : memory_->arrived(k);
        }
        return flags;
    }

    void wait_for_release(std::size_t k, Stream& stream) {
        if (!producer_->reuse_wait) return;
        memory_->wait_word(producer_->inbound[k], producer_->expected(k), stream,
                           "ipc: waiting for the consumer to release a slot");
    }

    std::unique_ptr<IpcMemory> memory_;
    Device& device_;
    TransportOptions options_;
    std::size_t bytes_;              // each tensor's
    std::vector<void*> landing_;     // the consumer's slots, where x arrives
    std::vector<Buffer> own_;        // the producer's slots that A writes (copy engine only)
    Buffer flags_;                   // the producer's side, then the consumer's
    SlotFlags* producer_ = nullptr;  // this rank's sides (null where it plays none)
    SlotFlags* consumer_ = nullptr;
};

}  // namespace

std::unique_ptr<Transport> make_ipc_transport(MPI_Comm comm, const PairPlacement& placement,
                                              Device& device, const TransportOptions& options) {
    auto memory = device.backend() == Backend::cuda
                      ? open_cuda_ipc_memory(comm, placement, options, device)
                      : open_host_ipc_memory(comm, placement, options);
    auto transport = std::make_unique<IpcTransport>(std::move(memory), placement, device, options);
    // The consumer's slots are poisoned before any producer may copy into them.
    const Deadline bound("the barrier after poisoning the ipc slots");
    MPI_CHECK(MPI_Barrier(comm));
    return transport;
}

}  // namespace gpurelay
