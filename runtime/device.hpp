// The device a rank drives: the CPU or one CUDA GPU, which the orchestration never asks about.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/buffer.hpp"
#include "runtime/graph.hpp"
#include "runtime/stream.hpp"
#include "runtime/timeout.hpp"

namespace gpurelay {

struct DeviceInfo {
    std::string name;        // "NVIDIA H200" or "host CPU"
    std::string pci_bus_id;  // empty on the CPU
    int ordinal = -1;        // CUDA device number as this process sees it; -1 on the CPU
    std::size_t total_memory = 0;
    std::size_t free_memory = 0;
};

// How long the host may wait on device work (then a runtime error) and what it checks meanwhile;
// not an NCCL abort, which would wait for the stuck work to free device memory (an exit does not).
struct WaitPolicy {
    std::chrono::milliseconds timeout = kDefaultTimeout;
    std::function<void()> poll;  // may throw (e.g. NCCL reports an asynchronous error)
};

class Device {
  public:
    virtual ~Device() = default;
    virtual Backend backend() const = 0;
    virtual DeviceInfo info() const = 0;
    // Makes this device current on the calling thread (a thread other than the one that made it).
    virtual void make_current() {}
    // Applies to streams and events made after the call (the CPU path bounds its waits itself).
    virtual void set_wait_policy(WaitPolicy policy) { (void)policy; }
    // `high_priority` for streams others wait on (comm); `label` names it in profiles.
    virtual std::unique_ptr<Stream> make_stream(bool high_priority, std::string_view label) = 0;
    virtual std::unique_ptr<Event> make_event(EventUse use) = 0;
    // Memory the kernels of this device read and write.
    virtual Buffer allocate(std::size_t bytes) = 0;
    // Host memory this device copies to and from at full speed (pinned on a GPU).
    virtual Buffer allocate_host(std::size_t bytes) = 0;
    // Queue a copy (either side device or host memory) and a byte fill on `stream`.
    virtual void copy_async(void* dst, const void* src, std::size_t bytes, Stream& stream) = 0;
    virtual void fill_async(void* dst, int byte, std::size_t bytes, Stream& stream) = 0;
    // Queues a host function on `stream`, in stream order; it must not call CUDA.
    virtual void enqueue_host(std::function<void()> fn, Stream& stream) = 0;
    // Queues on `stream` a hold until `word` (slot_flags.hpp; allocate_host or device memory)
    // reaches `value`, by the GPU's front end (cuStreamWaitValue32): a blocking host function would
    // hold the one thread running all host functions. `what` names it in a timeout.
    virtual void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                           const char* what) = 0;
    // Queues on `stream` setting the word to `value` once everything before it is done and its
    // writes are visible to whoever sees the value (cuStreamWriteValue32, which fences them).
    virtual void write_word(std::uint32_t* word, std::uint32_t value, Stream& stream) = 0;
    // Starts capturing the work of `origin` and of each of `joined` (which join at the start and
    // rejoin `origin` at the end), one graph launched on `origin`. The CPU path throws.
    virtual std::unique_ptr<GraphCapture> begin_capture(Stream& origin,
                                                        const std::vector<Stream*>& joined);
};

// The CPU path. `wait_timeout` bounds every queued wait (a peer that never delivers).
std::unique_ptr<Device> make_host_device(std::chrono::milliseconds wait_timeout);
// CUDA device `ordinal` (made current on this thread). Throws when built without CUDA.
std::unique_ptr<Device> make_cuda_device(int ordinal);
// How many GPUs this process can see: 0 when built without CUDA or when there are none.
int cuda_device_count();
// How this process's GPU (bus id `mine`) reaches `peer`'s on the node, as `nvidia-smi topo -m`
// would say ("same GPU, time-sliced", "peer access over PCIe"...), or why it is unknown.
std::string describe_peer_link(const std::string& mine, const std::string& peer);
bool cuda_built();
// "13.0 (driver 13.0)", or "none" when built without CUDA.
std::string cuda_version_string();

}  // namespace gpurelay
