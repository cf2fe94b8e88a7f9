// Device memory that another process of the node maps through a file descriptor (cuMemCreate,
// cuMemExportToShareableHandle, cuMemMap), which the ipc transport uses where the driver can: on
// an H200, cudaIpcOpenMemHandle's mapping lost 27% of a copy engine's rate once a producer cycled
// through 1 GiB of the peer's memory (four 256 MiB slots), and this one did not. CUDA builds only.
#pragma once

#include <cstddef>
#include <memory>

namespace gpurelay {

class VmmMemory {
  public:
    // Whether the driver and GPU `device` can make memory exportable as a descriptor.
    static bool supported(int device);
    // `bytes` on GPU `device`, rounded up to the allocation granularity, mapped for it.
    static std::unique_ptr<VmmMemory> create(std::size_t bytes, int device);
    // The peer's memory of `bytes` from its descriptor `fd` (still the caller's to close),
    // mapped for GPU `device` (the peer's own GPU or another with peer access to it).
    static std::unique_ptr<VmmMemory> import(int fd, std::size_t bytes, int device);

    ~VmmMemory();
    VmmMemory(const VmmMemory&) = delete;
    VmmMemory& operator=(const VmmMemory&) = delete;

    void* data() const { return reinterpret_cast<void*>(address_); }
    std::size_t size() const { return size_; }
    // A new descriptor of this memory, for the peer (the caller closes it).
    int export_fd() const;

  private:
    VmmMemory(unsigned long long handle, std::size_t size, int device, std::size_t alignment);

    unsigned long long handle_;       // CUmemGenericAllocationHandle
    unsigned long long address_ = 0;  // CUdeviceptr
    std::size_t size_;
};

}  // namespace gpurelay
