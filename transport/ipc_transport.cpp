// The ipc transport: the producer writes straight into its consumer's receive slot, in one copy
// (a GPU's copy engine; memcpy on the CPU path), and per-slot sequence words order each slot's
// uses across the two processes:
//   producer, n-th send into slot k:  wait released[k] >= n-1, copy, arrived[k] = n
//   (with ipc_engine = "sm", A itself writes the slot between the wait and the word)
//   consumer, n-th receive of slot k: wait arrived[k] >= n
//   consumer, n-th release of slot k: released[k] = n     (queued after B, the slot's reader)
// Every wait and write is queued on a stream, so the host never waits for the peer, and a slot
// is written again only after its last reader is done. The memory (IpcMemory) decides where the
// slots and words live and how the three operations run.
#include <optional>
#include <vector>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "transport/ipc_memory.hpp"
#include "transport/slot_ring.hpp"
#include "transport/transport.hpp"

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
          producer_side_(placement.role != Role::consumer),
          sent_(options.slots, 0),
          received_(options.slots, 0),
          released_(options.slots, 0) {
        // A's own slots, which the copy reads; with produce_in_place A writes the consumer's.
        for (std::size_t k = 0; k < options.slots; ++k) {
            if (placement.role != Role::consumer && !options.produce_in_place) {
                own_.push_back(device.allocate(options.slot_bytes));
            }
            if (placement.role != Role::producer) landing_.push_back(memory_->slot(k));
        }
        poison(device, landing_, options.slot_bytes);
    }

    std::string name() const override {
        return std::string(options_.produce_in_place ? "ipc sm" : "ipc") + " (" + memory_->link() +
               ")";
    }

    // In place, A writes the consumer's slot and so waits for its release first; a copy waits
    // for it at publish, after A has written the producer's own slot.
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
        memory_->write_word(memory_->arrived(k), ++sent_[k], stream);
    }

    const void* await(std::size_t k, Stream& stream) override {
        memory_->wait_word(memory_->arrived(k), ++received_[k], stream,
                           "ipc: waiting for the producer's copy");
        return memory_->slot(k);
    }

    void release(std::size_t k, Stream& stream) override {
        memory_->write_word(memory_->released(k), ++released_[k], stream);
    }

    // A writes the consumer's slot in place, so persistent kernels can run every step of the
    // protocol with these words; a copy is the host's to queue.
    std::optional<SlotWords> slot_words() override {
        if (!options_.produce_in_place) return std::nullopt;
        SlotWords words;
        words.reuse_wait = !options_.debug_skip_reuse_wait;
        for (std::size_t k = 0; k < options_.slots; ++k) {
            words.slots.push_back(memory_->slot(k));
            words.arrived.push_back(memory_->arrived(k));
            words.released.push_back(memory_->released(k));
            // Between passes a consumer has received and released each use its producer sent.
            words.uses.push_back(producer_side_ ? sent_[k] : received_[k]);
        }
        return words;
    }
    void add_uses(const std::vector<std::uint32_t>& more) override {
        for (std::size_t k = 0; k < more.size() && k < options_.slots; ++k) {
            sent_[k] += more[k];
            received_[k] += more[k];
            released_[k] += more[k];
        }
    }

    bool receive_waits() const override { return true; }
    // The words count each slot's uses, so no wait depends on what was recorded before.
    void streams_idle() override {}
    // Between passes: the producer writes again only after the pass's opening barrier, once the
    // consumer's slots are poisoned.
    void set_tensor_bytes(std::size_t bytes) override {
        check_tensor_bytes(bytes, options_.slot_bytes);
        poison(device_, landing_, bytes);
        bytes_ = bytes;
    }

  private:
    // The reuse wait before the producer writes slot k for its next use: the consumer's reader
    // of the use before is done with it.
    void wait_for_release(std::size_t k, Stream& stream) {
        if (options_.debug_skip_reuse_wait) return;
        memory_->wait_word(memory_->released(k), sent_[k], stream,
                           "ipc: waiting for the consumer to release a slot");
    }

    std::unique_ptr<IpcMemory> memory_;
    Device& device_;
    TransportOptions options_;
    std::size_t bytes_;           // each tensor's
    bool producer_side_;          // this rank sends (a producer, or both roles)
    std::vector<void*> landing_;  // the consumer's slots, where x arrives
    std::vector<Buffer> own_;     // the producer's slots that A writes (copy engine only)
    // Uses of each slot so far, counted alike on both sides (the sequence numbers).
    std::vector<std::uint32_t> sent_, received_, released_;
};

}  // namespace

std::unique_ptr<Transport> make_ipc_transport(MPI_Comm comm, const PairPlacement& placement,
                                              Device& device, const TransportOptions& options) {
    const IpcShape shape{options.slots, options.slot_bytes, options.timeout};
    auto memory = device.backend() == Backend::cuda
                      ? open_cuda_ipc_memory(comm, placement, shape, device)
                      : open_host_ipc_memory(comm, placement, shape);
    auto transport = std::make_unique<IpcTransport>(std::move(memory), placement, device, options);
    // The consumer's slots are poisoned before any producer may copy into them.
    const Deadline bound("the barrier after poisoning the ipc slots");
    MPI_CHECK(MPI_Barrier(comm));
    return transport;
}

}  // namespace gpurelay
