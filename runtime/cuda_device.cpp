#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "runtime/cuda_driver_call.hpp"
#include "runtime/cuda_stream.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/poll.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {
namespace {

// A blocking sync would miss a peer dead in an NCCL kernel: the host polls `query`, checks the
// transport, gives up after the timeout naming `what`; spins 100 us, then pauses up to 200 us under
// `sparing` (a sleep lasts the ~50 us timer slack: the GPU may run dry of the few steps queued).
void wait_for_gpu(const std::function<cudaError_t()>& query, const WaitPolicy& policy,
                  const char* what) {
    const bool done = poll_until(
        [&] {
            const cudaError_t status = query();
            if (status == cudaSuccess) return true;
            if (status != cudaErrorNotReady) CUDA_CHECK(status);
            if (policy.poll) policy.poll();
            return false;
        },
        std::chrono::steady_clock::now() + policy.timeout,
        {std::chrono::microseconds(100), std::chrono::microseconds(200)});
    if (!done) throw timeout_error(what, policy.timeout);
}

class CudaEvent final : public Event {
  public:
    CudaEvent(EventUse use, std::shared_ptr<const WaitPolicy> policy)
        : use_(use), policy_(std::move(policy)) {
        // Ordering-only events skip the timestamp, which makes record and wait cheaper.
        CUDA_CHECK(cudaEventCreateWithFlags(
            &event_, use == EventUse::timing ? cudaEventDefault : cudaEventDisableTiming));
    }
    ~CudaEvent() override {
        if (event_ != nullptr) cudaEventDestroy(event_);
    }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    // Captured, an ordering event is only an edge (graph.hpp), which costs a replay nothing.
    void record(Stream& stream) override {
        auto& cuda_stream = dynamic_cast<CudaStream&>(stream);
        if (cuda_stream.capturing() && use_ == EventUse::timing) {
            CUDA_CHECK(
                cudaEventRecordWithFlags(event_, cuda_stream.handle(), cudaEventRecordExternal));
        } else {
            CUDA_CHECK(cudaEventRecord(event_, cuda_stream.handle()));
        }
    }
    void synchronize() override {
        wait_for_gpu([this] { return cudaEventQuery(event_); }, *policy_,
                     "work before a CUDA event");
    }
    double elapsed_ms_since(Event& start) override {
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, dynamic_cast<CudaEvent&>(start).event_, event_));
        return ms;
    }
    cudaEvent_t handle() const { return event_; }

  private:
    cudaEvent_t event_ = nullptr;
    EventUse use_;
    std::shared_ptr<const WaitPolicy> policy_;
};

void free_device(void* p) noexcept { cudaFree(p); }
void free_pinned(void* p) noexcept { cudaFreeHost(p); }

class CudaDevice final : public Device {
  public:
    explicit CudaDevice(int ordinal) : ordinal_(ordinal) { CUDA_CHECK(cudaSetDevice(ordinal)); }

    Backend backend() const override { return Backend::cuda; }
    void make_current() override { CUDA_CHECK(cudaSetDevice(ordinal_)); }
    void set_wait_policy(WaitPolicy policy) override {
        policy_ = std::make_shared<const WaitPolicy>(std::move(policy));
    }

    DeviceInfo info() const override {
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal_));
        char bus_id[32] = {};
        CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal_));
        std::size_t free_bytes = 0, total_bytes = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        return {prop.name, bus_id, ordinal_, total_bytes, free_bytes};
    }

    std::unique_ptr<Stream> make_stream(bool high_priority, std::string_view label) override {
        auto stream = std::make_unique<CudaStream>(high_priority, policy_);
        nvtxNameCudaStreamA(stream->handle(), std::string(label).c_str());
        return stream;
    }
    std::unique_ptr<Event> make_event(EventUse use) override {
        return std::make_unique<CudaEvent>(use, policy_);
    }
    Buffer allocate(std::size_t bytes) override {
        void* p = nullptr;
        CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
        return Buffer(p, bytes, free_device);
    }
    Buffer allocate_host(std::size_t bytes) override {
        void* p = nullptr;
        CUDA_CHECK(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
        return Buffer(p, bytes, free_pinned);
    }
    void copy_async(void* dst, const void* src, std::size_t bytes, Stream& stream) override {
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cuda_handle(stream)));
    }
    void fill_async(void* dst, int byte, std::size_t bytes, Stream& stream) override {
        CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, cuda_handle(stream)));
    }
    void enqueue_host(std::function<void()> fn, Stream& stream) override {
        auto* heap_fn = new std::function<void()>(std::move(fn));
        CUDA_CHECK(cudaLaunchHostFunc(
            cuda_handle(stream),
            [](void* arg) {
                std::unique_ptr<std::function<void()>> owned(
                    static_cast<std::function<void()>*>(arg));
                try {
                    (*owned)();
                } catch (...) {
                    // Nothing can catch an exception from the CUDA callback thread.
                    fail_fatally(std::current_exception());
                }
            },
            heap_fn));
    }
    // Unified addressing (as cudaMemcpyDefault assumes) gives pinned host and device memory, ours
    // or a peer's, one address on GPU and host. GEQ compares cyclically as reached() does. A stuck
    // hold is caught where the host waits; the word's setter has its own bound.
    void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                   const char*) override {
        driver_check(
            StreamMemOps::get("a stream's sequence word")
                .wait(reinterpret_cast<CUstream>(cuda_handle(stream)),
                      reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WAIT_VALUE_GEQ),
            "cuStreamWaitValue32");
    }
    void write_word(std::uint32_t* word, std::uint32_t value, Stream& stream) override {
        driver_check(
            StreamMemOps::get("a stream's sequence word")
                .write(reinterpret_cast<CUstream>(cuda_handle(stream)),
                       reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WRITE_VALUE_DEFAULT),
            "cuStreamWriteValue32");
    }
    std::unique_ptr<GraphCapture> begin_capture(Stream& origin,
                                                const std::vector<Stream*>& joined) override {
        std::vector<CudaStream*> streams;
        for (Stream* stream : joined) streams.push_back(&dynamic_cast<CudaStream&>(*stream));
        return begin_cuda_capture(dynamic_cast<CudaStream&>(origin), std::move(streams));
    }

  private:
    int ordinal_;
    std::shared_ptr<const WaitPolicy> policy_ = std::make_shared<const WaitPolicy>();
};

}  // namespace

CudaStream::CudaStream(bool high_priority, std::shared_ptr<const WaitPolicy> policy)
    : policy_(std::move(policy)) {
    int least = 0, greatest = 0;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking,
                                            high_priority ? greatest : least));
}

CudaStream::~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaStream::wait(Event& event) {
    CUDA_CHECK(cudaStreamWaitEvent(stream_, dynamic_cast<CudaEvent&>(event).handle(), 0));
}

void CudaStream::synchronize() {
    wait_for_gpu([this] { return cudaStreamQuery(stream_); }, *policy_, "work on a CUDA stream");
}

cudaStream_t cuda_handle(Stream& stream) { return dynamic_cast<CudaStream&>(stream).handle(); }

std::unique_ptr<Device> make_cuda_device(int ordinal) {
    return std::make_unique<CudaDevice>(ordinal);
}

int cuda_device_count() {
    int count = 0;
    // No driver or no GPU both mean "no GPU here": the caller decides whether that is an error.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

bool cuda_built() { return true; }

std::string describe_peer_link(const std::string& mine, const std::string& peer) {
    if (mine == peer) {
        // Two processes on one GPU run by turns unless an MPS server runs their work together.
        int device = -1, mps = 0;
        if (cudaDeviceGetByPCIBusId(&device, mine.c_str()) != cudaSuccess ||
            cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device) != cudaSuccess) {
            cudaGetLastError();
            return "same GPU";
        }
        return mps ? "same GPU, shared through MPS" : "same GPU, time-sliced";
    }
    int a = -1, b = -1;
    // Each lookup fails when the GPU is hidden from this process (e.g. srun --gpus-per-task=1).
    if (cudaDeviceGetByPCIBusId(&a, mine.c_str()) != cudaSuccess ||
        cudaDeviceGetByPCIBusId(&b, peer.c_str()) != cudaSuccess) {
        cudaGetLastError();
        return "unknown (the peer's GPU is not visible to this rank)";
    }
    int access = 0, atomics = 0;
    if (cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, a, b) != cudaSuccess ||
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) !=
            cudaSuccess) {
        cudaGetLastError();
        return "unknown (peer query failed)";
    }
    if (!access) return "no peer access (through host memory)";
    // PCIe peer links do not carry native atomics; NVLink does.
    return atomics ? "peer access with native atomics (NVLink)" : "peer access over PCIe";
}

void profiler_start(Backend backend) {
    if (backend == Backend::cuda) CUDA_CHECK(cudaProfilerStart());
}
void profiler_stop(Backend backend) {
    if (backend == Backend::cuda) CUDA_CHECK(cudaProfilerStop());
}

std::string cuda_version_string() {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    auto fmt = [](int v) {
        return v == 0 ? std::string("none")
                      : std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    };
    return fmt(runtime) + " (driver " + fmt(driver) + ")";
}

}  // namespace gpurelay
