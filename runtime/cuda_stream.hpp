// CUDA streams and events behind the Stream/Event interface. Only CUDA builds include this.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

class CudaStream final : public Stream {
  public:
    CudaStream(bool high_priority, std::shared_ptr<const WaitPolicy> policy);
    ~CudaStream() override;
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    Backend backend() const override { return Backend::cuda; }
    void wait(Event& event) override;
    void synchronize() override;
    cudaStream_t handle() const { return stream_; }
    // Whether a graph capture is recording this stream's work (set by the capture only).
    bool capturing() const { return capturing_; }
    void set_capturing(bool capturing) { capturing_ = capturing; }

  private:
    cudaStream_t stream_ = nullptr;
    bool capturing_ = false;
    std::shared_ptr<const WaitPolicy> policy_;
};

class CudaEvent final : public Event {
  public:
    CudaEvent(EventUse use, std::shared_ptr<const WaitPolicy> policy);
    ~CudaEvent() override;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    void record(Stream& stream) override;
    void synchronize() override;
    double elapsed_ms_since(Event& start) override;
    cudaEvent_t handle() const { return event_; }

  private:
    cudaEvent_t event_ = nullptr;
    EventUse use_;
    std::shared_ptr<const WaitPolicy> policy_;
};

// Waits until `query` stops answering cudaErrorNotReady, polling `policy` while it waits; throws
// after the policy's timeout, naming `what`.
void wait_for_gpu(const std::function<cudaError_t()>& query, const WaitPolicy& policy,
                  const char* what);

// The CUDA stream behind `stream`; throws if it is a host stream.
cudaStream_t cuda_handle(Stream& stream);

}  // namespace gpurelay
