// VmmMemory, on the driver's virtual memory calls (found through the runtime).
#include "transport/cuda_vmm_memory.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/cuda_driver_call.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

struct VmmCalls {
    PFN_cuMemCreate_v10020 create = nullptr;
    PFN_cuMemRelease_v10020 release = nullptr;
    PFN_cuMemAddressReserve_v10020 reserve = nullptr;
    PFN_cuMemAddressFree_v10020 free_address = nullptr;
    PFN_cuMemMap_v10020 map = nullptr;
    PFN_cuMemUnmap_v10020 unmap = nullptr;
    PFN_cuMemSetAccess_v10020 set_access = nullptr;
    PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
    PFN_cuMemExportToShareableHandle_v10020 export_handle = nullptr;
    PFN_cuMemImportFromShareableHandle_v10020 import_handle = nullptr;
    bool found = false;

    static const VmmCalls& get() {
        static const VmmCalls calls = [] {
            VmmCalls c;
            c.found = find_driver_call("cuMemCreate", c.create) &&
                      find_driver_call("cuMemRelease", c.release) &&
                      find_driver_call("cuMemAddressReserve", c.reserve) &&
                      find_driver_call("cuMemAddressFree", c.free_address) &&
                      find_driver_call("cuMemMap", c.map) &&
                      find_driver_call("cuMemUnmap", c.unmap) &&
                      find_driver_call("cuMemSetAccess", c.set_access) &&
                      find_driver_call("cuMemGetAllocationGranularity", c.granularity) &&
                      find_driver_call("cuMemExportToShareableHandle", c.export_handle) &&
                      find_driver_call("cuMemImportFromShareableHandle", c.import_handle);
            return c;
        }();
        return calls;
    }
};

CUmemAllocationProp properties(int device) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

std::size_t granularity(int device) {
    const CUmemAllocationProp prop = properties(device);
    std::size_t g = 0;
    driver_check(VmmCalls::get().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                 "cuMemGetAllocationGranularity");
    return g;
}

}  // namespace

bool VmmMemory::supported(int device) {
    const VmmCalls& calls = VmmCalls::get();
    if (!calls.found) return false;
    // One granule made and released: the only sure test that this GPU exports descriptors.
    const CUmemAllocationProp prop = properties(device);
    std::size_t g = 0;
    CUmemGenericAllocationHandle handle{};
    if (calls.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
        calls.create(&handle, g, &prop, 0) != CUDA_SUCCESS) {
        return false;
    }
    calls.release(handle);
    return true;
}

VmmMemory::VmmMemory(unsigned long long handle, std::size_t size, int device, std::size_t alignment)
    : handle_(handle), size_(size) {
    const VmmCalls& calls = VmmCalls::get();
    CUdeviceptr address = 0;
    CUresult result = calls.reserve(&address, size_, alignment, 0, 0);
    if (result == CUDA_SUCCESS) {
        result = calls.map(address, size_, 0, handle_, 0);
        if (result != CUDA_SUCCESS) calls.free_address(address, size_);
    }
    if (result != CUDA_SUCCESS) {
        calls.release(handle_);
        driver_check(result, "cuMemAddressReserve/cuMemMap");
    }
    address_ = address;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    result = calls.set_access(address, size_, &access, 1);
    if (result != CUDA_SUCCESS) {
        calls.unmap(address, size_);
        calls.free_address(address, size_);
        calls.release(handle_);
        driver_check(result, "cuMemSetAccess");
    }
}

std::unique_ptr<VmmMemory> VmmMemory::create(std::size_t bytes, int device) {
    const std::size_t g = granularity(device);
    const std::size_t size = (bytes + g - 1) / g * g;
    const CUmemAllocationProp prop = properties(device);
    CUmemGenericAllocationHandle handle{};
    driver_check(VmmCalls::get().create(&handle, size, &prop, 0), "cuMemCreate");
    return std::unique_ptr<VmmMemory>(new VmmMemory(handle, size, device, g));
}

std::unique_ptr<VmmMemory> VmmMemory::import(int fd, std::size_t bytes, int device) {
    CUmemGenericAllocationHandle handle{};
    driver_check(VmmCalls::get().import_handle(
                     &handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                 "cuMemImportFromShareableHandle");
    return std::unique_ptr<VmmMemory>(new VmmMemory(handle, bytes, device, granularity(device)));
}

VmmMemory::~VmmMemory() {
    // The memory itself lives until the last process that maps it lets it go.
    const VmmCalls& calls = VmmCalls::get();
    calls.unmap(address_, size_);
    calls.free_address(address_, size_);
    calls.release(handle_);
}

int VmmMemory::export_fd() const {
    int fd = -1;
    driver_check(
        VmmCalls::get().export_handle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
    return fd;
}

}  // namespace gpurelay
