// CUDA streams and graph captures behind Stream and GraphCapture (events are cuda_device.cpp's).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/graph.hpp"
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

// The CUDA stream behind `stream`; throws if it is a host stream.
cudaStream_t cuda_handle(Stream& stream);

// Thread-local: other threads (the writer, NCCL's proxy) keep calling CUDA while this one captures.
std::unique_ptr<GraphCapture> begin_cuda_capture(CudaStream& origin,
                                                 std::vector<CudaStream*> joined);

}  // namespace gpurelay
