// CUDA graphs behind the Graph/GraphCapture interface. Only CUDA builds include this.
#pragma once

#include <memory>
#include <vector>

#include "runtime/cuda_stream.hpp"
#include "runtime/graph.hpp"

namespace gpurelay {

// Starts a capture of `origin`'s work (and of each of `joined`'s, forked from `origin` at the
// start and joined back at the end), in thread-local mode: other threads (the writer, NCCL's
// proxy) keep calling CUDA while this one captures.
std::unique_ptr<GraphCapture> begin_cuda_capture(CudaStream& origin,
                                                 std::vector<CudaStream*> joined);

}  // namespace gpurelay
