// The ipc transport: the producer writes straight into its consumer's receive slot, in one copy
// (a GPU's copy engine; memcpy on the CPU path), and per-slot sequence words order each slot's
// uses across the two processes:
//   producer, n-th send into slot k:  wait released[k] >= n-1, copy, arrived[k] = n
//   consumer, n-th receive of slot k: wait arrived[k] >= n
//   consumer, n-th release of slot k: released[k] = n     (queued after B, the slot's reader)
// Every wait and write is queued on a stream, so the host never waits for the peer, and a slot
// is written again only after its last reader is done. The memory (IpcMemory) decides where the
// slots and words live and how the three operations run.
#include <vector>

#include "comm/ipc_memory.hpp"
#include "comm/transport.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

class IpcTransport final : public Transport {
  public:
    IpcTransport(std::unique_ptr<IpcMemory> memory, const TransportOptions& options)
        : memory_(std::move(memory)),
          options_(options),
          sent_(options.slots, 0),
          received_(options.slots, 0),
          released_(options.slots, 0),
          wait_queued_(options.slots, false) {}

    std::string name() const override {
        return std::string(options_.produce_in_place ? "ipc sm" : "ipc") + " (" + memory_->link() +
               ")";
    }

    void* receive_slot(std::size_t k) override { return memory_->slot(k); }

    // No grouping: a rank that sends to itself copies on its send stream and its receive
    // stream waits for the word, so neither side waits for the other to be queued.
    void exchange(const SendSide* send, const RecvSide* recv) override {
        if (send != nullptr) queue_send(*send);
        if (recv != nullptr) queue_receive(*recv);
    }

    bool receive_only_waits() const override { return true; }

    // The reuse wait of the next copy into slot k, queued apart so the caller times the copy alone
    // (with ipc_engine = "sm" produce_into has queued it already, before A).
    void queue_send_wait(std::size_t k, Stream& stream) override { queue_wait_ahead(k, stream); }

    // ipc_engine = "sm": A writes into slot k itself, after the reuse wait that a copy would have
    // had (the send that follows counts this use).
    void* produce_into(std::size_t k, Stream& stream) override {
        if (!options_.produce_in_place) return nullptr;
        queue_wait_ahead(k, stream);
        return memory_->slot(k);
    }

    void release(std::size_t k, Stream& stream) override {
        memory_->write_word(memory_->released(k), ++released_[k], stream);
    }

  private:
    void queue_send(const SendSide& send) {
        const std::size_t k = send.slot;
        check(send.bytes, k);
        const std::uint32_t n = ++sent_[k];
        if (!wait_queued_[k]) wait_for_release(k, n, send.stream);
        wait_queued_[k] = false;
        // Written in place by A (after produce_into's wait), or copied now.
        if (send.data != memory_->slot(k)) {
            memory_->copy(memory_->slot(k), send.data, send.bytes, send.stream);
        }
        memory_->write_word(memory_->arrived(k), n, send.stream);
    }

    // The reuse wait of the next send into slot k, queued on `stream` ahead of that send (once).
    void queue_wait_ahead(std::size_t k, Stream& stream) {
        check(0, k);
        if (wait_queued_[k]) return;
        wait_for_release(k, sent_[k] + 1, stream);
        wait_queued_[k] = true;
    }

    // The reuse wait, on the producer's side, before its n-th write into slot k: the consumer's
    // reader of the previous use must be done with it.
    void wait_for_release(std::size_t k, std::uint32_t n, Stream& stream) {
        if (options_.debug_skip_reuse_wait) return;
        memory_->wait_word(memory_->released(k), n - 1, stream,
                           "ipc: waiting for the consumer to release a slot");
    }

    void queue_receive(const RecvSide& recv) {
        const std::size_t k = recv.slot;
        check(recv.bytes, k);
        if (recv.data != memory_->slot(k)) {
            throw runtime_error("ipc: a receive must land in the transport's own slot");
        }
        memory_->wait_word(memory_->arrived(k), ++received_[k], recv.stream,
                           "ipc: waiting for the producer's copy");
    }

    void check(std::size_t bytes, std::size_t k) const {
        if (k >= sent_.size() || bytes > options_.max_message_bytes) {
            throw runtime_error("ipc: message of " + std::to_string(bytes) + " bytes into slot " +
                                std::to_string(k) + " exceeds the " + std::to_string(sent_.size()) +
                                " slots of " + std::to_string(options_.max_message_bytes) +
                                " bytes");
        }
    }

    std::unique_ptr<IpcMemory> memory_;
    TransportOptions options_;
    // Uses of each slot so far, counted alike on both sides (the sequence numbers).
    std::vector<std::uint32_t> sent_, received_, released_;
    std::vector<bool> wait_queued_;  // slot k's next send has its reuse wait queued already
};

}  // namespace

std::unique_ptr<Transport> make_ipc_transport(MPI_Comm comm, const PairPlacement& placement,
                                              Device& device, const TransportOptions& options) {
    if (!every_pair_on_one_node(comm, placement.peer)) {
        throw usage_error(
            "transport = \"ipc\" needs each producer and its consumer on one node, but a pair "
            "spans two nodes; use transport = \"mpi\" or \"auto\"");
    }
    const IpcShape shape{options.slots, options.max_message_bytes, options.timeout};
    auto memory = device.backend() == Backend::cuda
                      ? open_cuda_ipc_memory(comm, placement, shape, device)
                      : open_host_ipc_memory(comm, placement, shape);
    return std::make_unique<IpcTransport>(std::move(memory), options);
}

}  // namespace gpurelay
