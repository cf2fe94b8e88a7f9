// The ipc transport's memory on the CPU path: each consumer's slots and flags in its segment of a
// node-wide MPI-3 shared-memory window, which its producer's host stream copies straight into.
#include <algorithm>
#include <cstring>

#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/slot_flags.hpp"
#include "transport/ipc_memory.hpp"

namespace gpurelay {
namespace {

// One word per cache line, so the two processes' stores to different words do not contend.
constexpr std::size_t kWordStride = 64;
// Slots start on a page: the window's segments are mapped page by page.
constexpr std::size_t kSlotAlign = 4096;

class HostIpcMemory final : public IpcMemory {
  public:
    HostIpcMemory(MPI_Comm comm, const PairPlacement& placement, const TransportOptions& options)
        : timeout_(options.timeout),
          words_bytes_(round_up(2 * options.slots * kWordStride, kSlotAlign)),
          slot_stride_(round_up(std::max<std::size_t>(options.slot_bytes, 1), kSlotAlign)) {
        const Deadline bound("making the ipc shared-memory window");
        MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_));
        // Only consumers hold slots; producers join the window with an empty segment.
        const auto size = static_cast<MPI_Aint>(
            placement.role != Role::producer ? words_bytes_ + options.slots * slot_stride_ : 0);
        MPI_Info info = MPI_INFO_NULL;
        MPI_CHECK(MPI_Info_create(&info));
        // Each segment apart and page-aligned, rather than all of them packed end to end.
        MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
        void* mine = nullptr;
        const int status = MPI_Win_allocate_shared(size, 1, info, node_, &mine, &window_);
        MPI_Info_free(&info);
        MPI_CHECK(status);
        const int consumer = rank_in(comm, node_, placement.consumer);
        if (consumer == MPI_UNDEFINED) {
            throw runtime_error("ipc: rank " + std::to_string(placement.consumer) +
                                " is not on this node");
        }
        MPI_Aint segment_bytes = 0;
        int unit = 1;
        MPI_CHECK(MPI_Win_shared_query(window_, consumer, &segment_bytes, &unit, &base_));
        if (mine != nullptr) std::fill_n(static_cast<char*>(mine), words_bytes_, 0);
        // The consumer's zeroed words are in place before its producer's first use of them.
        MPI_CHECK(MPI_Barrier(node_));
    }

    ~HostIpcMemory() override {
        // Collective over the node's ranks, which all tear their transports down together.
        const Deadline bound("freeing the ipc shared-memory window (MPI_Win_free)");
        MPI_Win_free(&window_);
        MPI_Comm_free(&node_);
    }
    HostIpcMemory(const HostIpcMemory&) = delete;
    HostIpcMemory& operator=(const HostIpcMemory&) = delete;

    std::string link() const override { return "shared memory"; }
    void* slot(std::size_t k) const override {
        return static_cast<char*>(base_) + words_bytes_ + k * slot_stride_;
    }
    std::uint32_t* arrived(std::size_t k) const override { return word(2 * k); }
    std::uint32_t* released(std::size_t k) const override { return word(2 * k + 1); }

    void copy(void* dst, const void* src, std::size_t bytes, Stream& stream) override {
        host(stream).enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
    }

    void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                   const char* what) override {
        // Pauses up to 1 ms leave a core to the peer (its C takes milliseconds; short naps cost
        // minutes of system time over the sanitize tier on two cores), whose store wakes no one.
        host(stream).enqueue([word, value, what, timeout = timeout_] {
            wait_until(word, value, timeout, what, std::chrono::microseconds(1000));
        });
    }

  private:
    static HostStream& host(Stream& stream) { return dynamic_cast<HostStream&>(stream); }

    std::uint32_t* word(std::size_t index) const {
        return reinterpret_cast<std::uint32_t*>(static_cast<char*>(base_) + index * kWordStride);
    }

    std::chrono::milliseconds timeout_;
    std::size_t words_bytes_;
    std::size_t slot_stride_;
    MPI_Comm node_ = MPI_COMM_NULL;
    MPI_Win window_ = MPI_WIN_NULL;
    void* base_ = nullptr;  // the consumer's segment, in this process
};

}  // namespace

std::unique_ptr<IpcMemory> open_host_ipc_memory(MPI_Comm comm, const PairPlacement& placement,
                                                const TransportOptions& options) {
    return std::make_unique<HostIpcMemory>(comm, placement, options);
}

}  // namespace gpurelay
