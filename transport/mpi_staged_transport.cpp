// MPI for device buffers via pinned host buffers in pieces (copying p+1 overlaps sending p), on
// proxy threads, one a direction, told of pieces by PieceBoard: ordering stays on the streams, the
// queuing thread never blocks, no stream's wait holds another's (a relay stage has both).
#include <algorithm>
#include <climits>
#include <vector>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/host_stream.hpp"
#include "transport/piece_board.hpp"
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

// MPI guarantees tags up to 32767; pieces with one tag still match in order between two ranks.
constexpr std::size_t kMaxTag = 32767;

class MpiStagedTransport final : public SlotRingTransport {
  public:
    MpiStagedTransport(MPI_Comm comm, const PairPlacement& placement, Device& device,
                       const TransportOptions& options)
        : SlotRingTransport(device, placement, options),
          piece_bytes_(
              std::min<std::size_t>(std::max<std::size_t>(options.chunk_bytes, 1), INT_MAX)),
          pieces_(piece_count(options.slot_bytes)),
          send_staging_(device.allocate_host(options.slot_bytes)),
          recv_staging_(device.allocate_host(options.slot_bytes)),
          send_copied_(device, pieces_),
          send_done_(device, 1),
          recv_arrived_(device, pieces_),
          recv_consumed_(device, pieces_),
          recv_piece_last_user_(pieces_, 0),
          send_proxy_(options.timeout),
          recv_proxy_(options.timeout) {
        const Deadline bound("duplicating the staged transport's communicator");
        MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    }

    ~MpiStagedTransport() override {
        // The proxies must be idle before the communicator goes away.
        send_proxy_.synchronize();
        recv_proxy_.synchronize();
        MPI_Comm_free(&comm_);
    }

    std::string name() const override { return "mpi (host-staged)"; }

    void publish(std::size_t k, Stream& stream) override {
        const void* data = send_[k].data();
        const std::uint64_t ticket = ++send_tickets_;
        const std::size_t bytes = bytes_, pieces = piece_count(bytes);
        auto* staging = static_cast<char*>(send_staging_.data());
        for (std::size_t p = 0; p < pieces; ++p) {
            const std::size_t offset = p * piece_bytes_;
            device_.copy_async(staging + offset, static_cast<const char*>(data) + offset,
                               piece_length(bytes, p), stream);
            send_copied_.mark_on(ticket, p, stream);
        }
        send_proxy_.enqueue([this, ticket, pieces, bytes, peer = peer_, staging] {
            std::vector<MPI_Request> requests(pieces, MPI_REQUEST_NULL);
            for (std::size_t p = 0; p < pieces; ++p) {
                send_copied_.wait(ticket, p, options_.timeout, "staging copy of a send");
                MPI_CHECK(MPI_Isend(staging + p * piece_bytes_,
                                    static_cast<int>(piece_length(bytes, p)), MPI_BYTE, peer,
                                    static_cast<int>(p % kMaxTag), comm_, &requests[p]));
            }
            wait_all(requests.data(), static_cast<int>(pieces), options_.timeout,
                     "MPI send to rank " + std::to_string(peer));
            send_done_.mark(ticket, 0);
        });
        // In stream order the send ends once MPI is done with staging: the next send may refill it.
        send_done_.wait_on(ticket, 0, stream, "MPI send");
    }

    const void* await(std::size_t k, Stream& stream) override {
        wait_free(k, stream);
        void* data = recv_[k].data();
        const std::uint64_t ticket = ++recv_tickets_;
        const std::size_t bytes = bytes_, pieces = piece_count(bytes);
        auto* staging = static_cast<char*>(recv_staging_.data());
        // Which earlier message last used each staging piece: the proxy may overwrite a piece
        // only after that message's host-to-device copy of it has finished.
        std::vector<std::uint64_t> previous_users(
            recv_piece_last_user_.begin(),
            recv_piece_last_user_.begin() + static_cast<std::ptrdiff_t>(pieces));
        for (std::size_t p = 0; p < pieces; ++p) recv_piece_last_user_[p] = ticket;
        recv_proxy_.enqueue([this, ticket, pieces, bytes, peer = peer_, staging, previous_users] {
            std::vector<MPI_Request> requests(pieces, MPI_REQUEST_NULL);
            for (std::size_t p = 0; p < pieces; ++p) {
                recv_consumed_.wait(previous_users[p], p, options_.timeout,
                                    "copy out of the receive staging buffer");
                MPI_CHECK(MPI_Irecv(staging + p * piece_bytes_,
                                    static_cast<int>(piece_length(bytes, p)), MPI_BYTE, peer,
                                    static_cast<int>(p % kMaxTag), comm_, &requests[p]));
            }
            for (std::size_t p = 0; p < pieces; ++p) {
                wait_all(&requests[p], 1, options_.timeout,
                         "MPI receive from rank " + std::to_string(peer));
                recv_arrived_.mark(ticket, p);
            }
        });
        for (std::size_t p = 0; p < pieces; ++p) {
            const std::size_t offset = p * piece_bytes_;
            recv_arrived_.wait_on(ticket, p, stream, "MPI receive");
            device_.copy_async(static_cast<char*>(data) + offset, staging + offset,
                               piece_length(bytes, p), stream);
            recv_consumed_.mark_on(ticket, p, stream);
        }
        return data;
    }

  private:
    std::size_t piece_count(std::size_t bytes) const {
        return std::max<std::size_t>(1, (bytes + piece_bytes_ - 1) / piece_bytes_);
    }
    std::size_t piece_length(std::size_t bytes, std::size_t p) const {
        return std::min(piece_bytes_, bytes - std::min(bytes, p * piece_bytes_));
    }

    std::size_t piece_bytes_;
    std::size_t pieces_;
    Buffer send_staging_;
    Buffer recv_staging_;
    PieceBoard send_copied_;
    PieceBoard send_done_;
    PieceBoard recv_arrived_;
    PieceBoard recv_consumed_;
    std::vector<std::uint64_t> recv_piece_last_user_;
    std::uint64_t send_tickets_ = 0;
    std::uint64_t recv_tickets_ = 0;
    MPI_Comm comm_ = MPI_COMM_NULL;
    // Declared last: destroyed first, while everything their queued work uses still exists.
    HostStream send_proxy_;
    HostStream recv_proxy_;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_staged_transport(MPI_Comm comm, const PairPlacement& placement,
                                                     Device& device,
                                                     const TransportOptions& options) {
    return std::make_unique<MpiStagedTransport>(comm, placement, device, options);
}

}  // namespace gpurelay
