// The CPU path's transport: MPI runs on its stream's thread, starting when the stream reaches it.
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/host_stream.hpp"
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

class MpiHostTransport final : public SlotRingTransport {
  public:
    MpiHostTransport(MPI_Comm comm, const PairPlacement& placement, Device& device,
                     const TransportOptions& options)
        : SlotRingTransport(device, placement, options) {
        // A private communicator: the transport's messages never match the application's.
        const Deadline bound("duplicating the MPI transport's communicator");
        MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    }
    ~MpiHostTransport() override { MPI_Comm_free(&comm_); }

    std::string name() const override { return "mpi (host memory)"; }

    void publish(std::size_t k, Stream& stream) override { queue(send_[k].data(), true, stream); }

    const void* await(std::size_t k, Stream& stream) override {
        wait_free(k, stream);
        queue(recv_[k].data(), false, stream);
        return recv_[k].data();
    }

  private:
    // The tensor in `chunk` pieces, all of them in flight at once, once the stream reaches it.
    void queue(void* data, bool sending, Stream& stream) {
        dynamic_cast<HostStream&>(stream).enqueue([this, data, sending] {
            transfer_pieces(data, bytes_, options_.chunk_bytes, peer_, sending, comm_,
                            options_.timeout);
        });
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_host_transport(MPI_Comm comm, const PairPlacement& placement,
                                                   Device& device,
                                                   const TransportOptions& options) {
    return std::make_unique<MpiHostTransport>(comm, placement, device, options);
}

}  // namespace gpurelay
