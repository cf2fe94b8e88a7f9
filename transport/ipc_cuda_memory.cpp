// The ipc transport's memory on the GPU. The consumer's slots and arrived words are one allocation
// it exports, the producer's released words one of its own: each side waits only on its own memory,
// so no wait polls across NVLink. Shared as file descriptors (cuMemCreate, see cuda_vmm_memory.hpp)
// where both can, else by cudaIpcGetMemHandle. Ordered by flags, not interprocess events (bound to
// the latest record at the call: a per-step host handshake); a flag that only grows is right
// whenever the wait is queued, and the GPU's front end waits on it: no wait or copy takes an SM.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "mpi/error.hpp"
#include "runtime/cuda_driver_call.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"
#include "transport/cuda_vmm_memory.hpp"
#include "transport/fd_exchange.hpp"
#include "transport/ipc_memory.hpp"

namespace gpurelay {
namespace {

// The words first, then the slots, each on its own 4 KiB: slots stay aligned for vector loads.
constexpr std::size_t kAlign = 4096;
constexpr int kHandleTag = 7301;

struct Descriptor {
    int fd;
    ~Descriptor() { close(fd); }
};

// What each side sends at set-up: whether it can share a descriptor (used if both can), its memory.
struct Hello {
    int vmm;
    char pci_bus_id[32];
};
struct Export {
    cudaIpcMemHandle_t memory;  // without descriptors
    std::uint64_t bytes;        // with them: the size to map (the descriptor follows)
};

class CudaIpcMemory final : public IpcMemory {
  public:
    CudaIpcMemory(MPI_Comm comm, const PairPlacement& placement, const TransportOptions& options,
                  Device& device)
        : device_(device),
          slots_(options.slots),
          words_bytes_(round_up(2 * options.slots * sizeof(std::uint32_t), kAlign)),
          slot_stride_(round_up(std::max<std::size_t>(options.slot_bytes, 1), kAlign)) {
        StreamMemOps::get("ipc");  // fails here, at set-up, if the driver lacks them
        const bool producer = placement.role != Role::consumer;
        const bool consumer = placement.role != Role::producer;
        // Mine: the words I wait on, and the slots when I consume. Both roles: everything.
        const std::size_t bytes = words_bytes_ + (consumer ? slots_ * slot_stride_ : 0);
        const std::string my_bus = device.info().pci_bus_id;
        if (placement.role == Role::both) {
            mine_ = device.allocate(bytes);
            zero_words();
            consumer_base_ = producer_base_ = static_cast<char*>(mine());
            link_ = "one process";
            return;
        }
        const int ordinal = device.info().ordinal;
        Hello hello_out{VmmMemory::supported(ordinal) ? 1 : 0, {}};
        std::strncpy(hello_out.pci_bus_id, my_bus.c_str(), sizeof hello_out.pci_bus_id - 1);
        Hello hello_in{};
        MPI_CHECK(MPI_Sendrecv(&hello_out, sizeof hello_out, MPI_BYTE, placement.peer, kHandleTag,
                               &hello_in, sizeof hello_in, MPI_BYTE, placement.peer, kHandleTag,
                               comm, MPI_STATUS_IGNORE));
        link_ = describe_link(my_bus, std::string(hello_in.pci_bus_id));
        const bool vmm = hello_out.vmm != 0 && hello_in.vmm != 0;
        Export out{};
        if (vmm) {
            mine_vmm_ = VmmMemory::create(bytes, ordinal);
            zero_words();
            out.bytes = mine_vmm_->size();
        } else {
            mine_ = device.allocate(bytes);
            zero_words();
            CUDA_CHECK(cudaIpcGetMemHandle(&out.memory, mine()));
        }
        Export in{};
        MPI_CHECK(MPI_Sendrecv(&out, sizeof out, MPI_BYTE, placement.peer, kHandleTag, &in,
                               sizeof in, MPI_BYTE, placement.peer, kHandleTag, comm,
                               MPI_STATUS_IGNORE));
        map_theirs(comm, placement.peer, in, vmm, ordinal, options.timeout);
        consumer_base_ = static_cast<char*>(consumer ? mine() : theirs_);
        producer_base_ = static_cast<char*>(producer ? mine() : theirs_);
    }

    // Maps the peer's memory for this GPU: its descriptor (VMM, over a Unix socket) or IPC handle.
    void map_theirs(MPI_Comm comm, int peer, const Export& in, bool vmm, int ordinal,
                    std::chrono::milliseconds timeout) {
        if (!vmm) {
            // Lazy peer access: the driver enables it between the two GPUs if they differ.
            CUDA_CHECK(cudaIpcOpenMemHandle(&theirs_, in.memory, cudaIpcMemLazyEnablePeerAccess));
            theirs_opened_ = true;
            return;
        }
        const Descriptor fd{mine_vmm_->export_fd()};
        const Descriptor peer_fd{exchange_fd(comm, peer, fd.fd, timeout)};
        theirs_vmm_ = VmmMemory::import(peer_fd.fd, in.bytes, ordinal);
        theirs_ = theirs_vmm_->data();
    }

    // No handshake with the peer, which would hang where the peer's set-up failed: each pass
    // ends with both sides idle, and the driver keeps an allocation until its last mapping goes.
    ~CudaIpcMemory() override {
        if (theirs_opened_) cudaIpcCloseMemHandle(theirs_);
    }
    CudaIpcMemory(const CudaIpcMemory&) = delete;
    CudaIpcMemory& operator=(const CudaIpcMemory&) = delete;

    std::string link() const override { return link_; }
    void* slot(std::size_t k) const override {
        return consumer_base_ + words_bytes_ + k * slot_stride_;
    }
    // arrived[k] in the consumer's memory, released[k] in the producer's (apart in one process).
    std::uint32_t* arrived(std::size_t k) const override {
        return reinterpret_cast<std::uint32_t*>(consumer_base_) + k;
    }
    std::uint32_t* released(std::size_t k) const override {
        return reinterpret_cast<std::uint32_t*>(producer_base_) + slots_ + k;
    }

    void copy(void* dst, const void* src, std::size_t bytes, Stream& stream) override {
        // The copy engine moves it, over NVLink or PCIe when the slot is on another GPU.
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_handle(stream)));
    }

    // The words are device memory, this process's or the peer's: the GPU's front end waits.
    void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                   const char* what) override {
        device_.wait_word(word, value, stream, what);
    }

  private:
    void* mine() const { return mine_vmm_ ? mine_vmm_->data() : mine_.data(); }

    // Before the peer can map them: its first wait or write comes after the set-up.
    void zero_words() {
        CUDA_CHECK(cudaMemset(mine(), 0, words_bytes_));
        CUDA_CHECK(cudaDeviceSynchronize());
    }

    // "same GPU, time-sliced" (or ", shared through MPS"), "NVLink" or "PCIe", as reported.
    static std::string describe_link(const std::string& mine, const std::string& peer) {
        const std::string link = describe_peer_link(mine, peer);
        if (link.rfind("same GPU", 0) == 0) return link;
        if (link.find("NVLink") != std::string::npos) return "NVLink";
        if (link.find("PCIe") != std::string::npos) return "PCIe";
        if (link.find("no peer access") != std::string::npos) {
            throw runtime_error("transport = \"ipc\": GPU " + mine + " has no peer access to GPU " +
                                peer + " (use transport = \"mpi\")");
        }
        return "peer GPU (" + link + ")";
    }

    Device& device_;
    std::size_t slots_;
    std::size_t words_bytes_;
    std::size_t slot_stride_;
    Buffer mine_;                            // without descriptors
    std::unique_ptr<VmmMemory> mine_vmm_;    // with them
    std::unique_ptr<VmmMemory> theirs_vmm_;  // the peer's, mapped from its descriptor
    void* theirs_ = nullptr;
    bool theirs_opened_ = false;  // theirs_ from cudaIpcOpenMemHandle
    char* consumer_base_ = nullptr;
    char* producer_base_ = nullptr;
    std::string link_;
};

}  // namespace

std::unique_ptr<IpcMemory> open_cuda_ipc_memory(MPI_Comm comm, const PairPlacement& placement,
                                                const TransportOptions& options, Device& device) {
    return std::make_unique<CudaIpcMemory>(comm, placement, options, device);
}

}  // namespace gpurelay
