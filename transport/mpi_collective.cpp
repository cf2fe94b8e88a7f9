// The collectives over MPI (MPI_Ibcast, MPI_Iallreduce) between host buffers, on a host stream's
// thread or a proxy's behind a pinned staging buffer, in `chunk`-byte pieces all in flight.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "transport/piece_board.hpp"
#include "transport/slot_ring.hpp"

namespace gpurelay {
namespace {

std::size_t element_bytes(ReduceType type) { return type == ReduceType::float32 ? 4 : 8; }

// One collective now, on the calling thread, over a private duplicate of `group`. Broadcast: the
// root's `send` reaches every rank's `recv` (the root's own too, when it passes one other than
// `send`). All-reduce: the sum of every rank's `send` lands in `recv` (in place if they are one).
class MpiCollectiveCall {
  public:
    MpiCollectiveCall(MPI_Comm group, Collective op, ReduceType type,
                      const TransportOptions& options)
        : op_(op), type_(type), options_(options) {
        const Deadline bound("duplicating the collective's communicator");
        MPI_CHECK(MPI_Comm_dup(group, &comm_));
        int rank = 0, size = 1;
        MPI_CHECK(MPI_Comm_rank(comm_, &rank));
        MPI_CHECK(MPI_Comm_size(comm_, &size));
        root_ = rank == 0;
        what_ = std::string(op == Collective::broadcast ? "MPI_Ibcast" : "MPI_Iallreduce") +
                " in a group of " + std::to_string(size) + " ranks";
        // Whole elements per piece, and no more than MPI's int count.
        const std::size_t element = element_bytes(type);
        const std::size_t most = std::min<std::size_t>(options.chunk_bytes, INT_MAX);
        piece_bytes_ = std::max(element, most / element * element);
    }
    ~MpiCollectiveCall() { MPI_Comm_free(&comm_); }
    MpiCollectiveCall(const MpiCollectiveCall&) = delete;
    MpiCollectiveCall& operator=(const MpiCollectiveCall&) = delete;

    std::string name(const char* memory) const {
        return std::string("mpi ") + std::string(to_string(op_)) + " (" + memory + ")";
    }
    void check_sides(const void* send, const void* recv) const {
        check_collective_sides(op_, root_, send, recv);
    }

    void operator()(const void* send, void* recv, std::size_t bytes) const {
        auto* buffer = static_cast<char*>(
            op_ == Collective::broadcast && root_ ? const_cast<void*>(send) : recv);
        const auto* in = static_cast<const char*>(send);
        std::vector<MPI_Request> requests;
        for (std::size_t offset = 0; offset < bytes; offset += piece_bytes_) {
            const std::size_t length = std::min(piece_bytes_, bytes - offset);
            MPI_Request request = MPI_REQUEST_NULL;
            if (op_ == Collective::broadcast) {
                MPI_CHECK(MPI_Ibcast(buffer + offset, static_cast<int>(length), MPI_BYTE, 0, comm_,
                                     &request));
            } else {
                const std::size_t element = element_bytes(type_);
                MPI_CHECK(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : in + offset, buffer + offset,
                                         static_cast<int>(length / element),
                                         type_ == ReduceType::float32 ? MPI_FLOAT : MPI_DOUBLE,
                                         MPI_SUM, comm_, &request));
            }
            requests.push_back(request);
        }
        if (!requests.empty()) {
            wait_all(requests.data(), static_cast<int>(requests.size()), options_.timeout, what_);
        }
        if (op_ == Collective::broadcast && root_ && recv != nullptr && recv != send) {
            std::memcpy(recv, send, bytes);
        }
    }

  private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    Collective op_;
    ReduceType type_;
    TransportOptions options_;
    bool root_ = false;
    std::size_t piece_bytes_ = 1;
    std::string what_;
};

// The CPU path: the collective runs on the thread of the host stream it was queued on.
class MpiHostCollective final : public CollectiveCall {
  public:
    MpiHostCollective(MPI_Comm group, Collective op, ReduceType type,
                      const TransportOptions& options)
        : call_(group, op, type, options) {}

    std::string name() const override { return call_.name("host memory"); }

    void run(const void* send, void* recv, std::size_t bytes, Stream& stream) override {
        call_.check_sides(send, recv);
        dynamic_cast<HostStream&>(stream).enqueue(
            [this, send, recv, bytes] { call_(send, recv, bytes); });
    }

  private:
    MpiCollectiveCall call_;
};

// Device buffers (transport.hpp): MPI in place on a proxy thread, waited for through PieceBoard;
// the next call's copy-in follows the copy-out, so one staging buffer serves all.
class MpiStagedCollective final : public CollectiveCall {
  public:
    MpiStagedCollective(MPI_Comm group, Collective op, ReduceType type, Device& device,
                        const TransportOptions& options)
        : device_(device),
          options_(options),
          call_(group, op, type, options),
          staging_(device.allocate_host(options.slot_bytes)),
          copied_in_(device, 1),
          reduced_(device, 1),
          proxy_(options.timeout) {}
    ~MpiStagedCollective() override { proxy_.synchronize(); }  // idle before call_ frees comm

    std::string name() const override { return call_.name("host-staged"); }

    void run(const void* send, void* recv, std::size_t bytes, Stream& stream) override {
        call_.check_sides(send, recv);
        if (bytes > options_.slot_bytes) {
            throw runtime_error("message of " + std::to_string(bytes) +
                                " bytes exceeds the staging buffer");
        }
        const std::uint64_t ticket = ++tickets_;
        void* staging = staging_.data();
        if (send != nullptr) device_.copy_async(staging, send, bytes, stream);
        copied_in_.mark_on(ticket, 0, stream);
        proxy_.enqueue([this, ticket, staging, bytes] {
            copied_in_.wait(ticket, 0, options_.timeout, "copy into the collective's staging");
            call_(staging, staging, bytes);
            reduced_.mark(ticket, 0);
        });
        reduced_.wait_on(ticket, 0, stream, "MPI collective");
        if (recv != nullptr) device_.copy_async(recv, staging, bytes, stream);
    }

  private:
    Device& device_;
    TransportOptions options_;
    MpiCollectiveCall call_;
    Buffer staging_;
    PieceBoard copied_in_;
    PieceBoard reduced_;
    std::uint64_t tickets_ = 0;
    // Declared last: destroyed first, while everything its queued work uses still exists.
    HostStream proxy_;
};

}  // namespace

std::unique_ptr<CollectiveCall> make_mpi_host_collective(MPI_Comm group, Collective op,
                                                         ReduceType type, Device&,
                                                         const TransportOptions& options) {
    return std::make_unique<MpiHostCollective>(group, op, type, options);
}

std::unique_ptr<CollectiveCall> make_mpi_staged_collective(MPI_Comm group, Collective op,
                                                           ReduceType type, Device& device,
                                                           const TransportOptions& options) {
    return std::make_unique<MpiStagedCollective>(group, op, type, device, options);
}

}  // namespace gpurelay
