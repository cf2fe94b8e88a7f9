// CUDA graphs behind the Graph/GraphCapture interface. Only CUDA builds include this.
#pragma once

#include <memory>

#include "runtime/cuda_stream.hpp"
#include "runtime/graph.hpp"

namespace gpurelay {

// Starts a capture of `origin`'s work (and of `joined`'s, when not null, forked from `origin`
// at the start and joined back at the end), in thread-local mode: other threads (the writer,
// NCCL's proxy) keep calling CUDA while this one captures.
std::unique_ptr<GraphCapture> begin_cuda_capture(CudaStream& origin, CudaStream* joined);

}  // namespace gpurelay
