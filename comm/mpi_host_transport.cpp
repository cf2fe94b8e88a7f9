// The CPU path's transport: each send or receive runs MPI on the thread of the stream it was
// queued on, so it starts only when the stream reaches it, like a CUDA stream operation.
#include <algorithm>
#include <climits>

#include "comm/mpi_error.hpp"
#include "comm/mpi_wait.hpp"
#include "comm/transport.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"

namespace gpurelay {
namespace {

class MpiHostTransport final : public Transport {
  public:
    MpiHostTransport(MPI_Comm comm, const TransportOptions& options) : options_(options) {
        // A private communicator: the transport's messages never match the application's.
        MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    }
    ~MpiHostTransport() override { MPI_Comm_free(&comm_); }

    std::string name() const override { return "mpi (host memory)"; }

    void exchange(const SendSide* send, const RecvSide* recv) override {
        if (send != nullptr) {
            dynamic_cast<HostStream&>(send->stream)
                .enqueue([this, data = const_cast<void*>(send->data), bytes = send->bytes,
                          peer = send->peer] { transfer(data, bytes, peer, true); });
        }
        if (recv != nullptr) {
            dynamic_cast<HostStream&>(recv->stream)
                .enqueue([this, data = recv->data, bytes = recv->bytes, peer = recv->peer] {
                    transfer(data, bytes, peer, false);
                });
        }
    }

  private:
    // Messages over INT_MAX bytes go as several; MPI keeps their order between two ranks.
    void transfer(void* data, std::size_t bytes, int peer, bool sending) {
        const std::size_t piece = std::min<std::size_t>(options_.chunk_bytes, INT_MAX);
        auto* p = static_cast<char*>(data);
        for (std::size_t offset = 0; offset < bytes || offset == 0; offset += piece) {
            const int n = static_cast<int>(std::min(piece, bytes - offset));
            MPI_Request request = MPI_REQUEST_NULL;
            if (sending) {
                MPI_CHECK(MPI_Isend(p + offset, n, MPI_BYTE, peer, 0, comm_, &request));
            } else {
                MPI_CHECK(MPI_Irecv(p + offset, n, MPI_BYTE, peer, 0, comm_, &request));
            }
            wait_all(&request, 1, options_.timeout,
                     std::string(sending ? "MPI send to rank " : "MPI receive from rank ") +
                         std::to_string(peer));
            if (bytes == 0) break;
        }
    }

    TransportOptions options_;
    MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_host_transport(MPI_Comm comm, const TransportOptions& options) {
    return std::make_unique<MpiHostTransport>(comm, options);
}

}  // namespace gpurelay
