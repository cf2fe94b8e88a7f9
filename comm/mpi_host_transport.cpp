// The CPU path's transport: each send or receive runs MPI on the thread of the stream it was
// queued on, so it starts only when the stream reaches it, like a CUDA stream operation.
#include <algorithm>
#include <climits>
#include <vector>

#include "comm/mpi_error.hpp"
#include "comm/mpi_wait.hpp"
#include "comm/slot_ring.hpp"
#include "comm/transport.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"

namespace gpurelay {
namespace {

class MpiHostTransport final : public Transport {
  public:
    MpiHostTransport(MPI_Comm comm, const PairPlacement& placement, Device& device,
                     const TransportOptions& options)
        : options_(options),
          bytes_(options.slot_bytes),
          peer_(placement.peer),
          slots_(device, placement.role, options.slots, options.slot_bytes,
                 options.debug_skip_reuse_wait) {
        // A private communicator: the transport's messages never match the application's.
        const Deadline bound("duplicating the MPI transport's communicator");
        MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    }
    ~MpiHostTransport() override { MPI_Comm_free(&comm_); }

    std::string name() const override { return "mpi (host memory)"; }

    void* acquire(std::size_t k, Stream&) override { return slots_.send[k].data(); }

    void publish(std::size_t k, Stream& stream) override {
        dynamic_cast<HostStream&>(stream).enqueue(
            [this, data = slots_.send[k].data()] { transfer(data, true); });
    }

    const void* await(std::size_t k, Stream& stream) override {
        slots_.wait_free(k, stream);
        void* data = slots_.recv[k].data();
        dynamic_cast<HostStream&>(stream).enqueue([this, data] { transfer(data, false); });
        return data;
    }

    void release(std::size_t k, Stream& stream) override { slots_.free.record(k, stream); }
    bool receive_waits() const override { return false; }
    void streams_idle() override { slots_.free.streams_idle(); }
    void set_tensor_bytes(std::size_t bytes) override { bytes_ = slots_.resize(bytes); }

  private:
    // The tensor in pieces of `chunk` bytes (at most INT_MAX), all of them in flight at once:
    // one at a time, each piece's handshake left MPI idle between pieces. MPI keeps their order
    // between two ranks.
    void transfer(void* data, bool sending) {
        const std::size_t bytes = bytes_;
        const int peer = peer_;
        const std::size_t piece = std::min<std::size_t>(options_.chunk_bytes, INT_MAX);
        auto* p = static_cast<char*>(data);
        std::vector<MPI_Request> requests(std::max<std::size_t>(1, (bytes + piece - 1) / piece),
                                          MPI_REQUEST_NULL);
        for (std::size_t i = 0; i < requests.size(); ++i) {
            const std::size_t offset = i * piece;
            const int n = static_cast<int>(std::min(piece, bytes - offset));
            if (sending) {
                MPI_CHECK(MPI_Isend(p + offset, n, MPI_BYTE, peer, 0, comm_, &requests[i]));
            } else {
                MPI_CHECK(MPI_Irecv(p + offset, n, MPI_BYTE, peer, 0, comm_, &requests[i]));
            }
        }
        wait_all(requests.data(), static_cast<int>(requests.size()), options_.timeout,
                 std::string(sending ? "MPI send to rank " : "MPI receive from rank ") +
                     std::to_string(peer));
    }

    TransportOptions options_;
    std::size_t bytes_;  // each tensor's (the stream threads read it only while queued work runs)
    int peer_;
    SlotRing slots_;
    MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_host_transport(MPI_Comm comm, const PairPlacement& placement,
                                                   Device& device,
                                                   const TransportOptions& options) {
    return std::make_unique<MpiHostTransport>(comm, placement, device, options);
}

}  // namespace gpurelay
