// Stream work recorded once and replayed with one launch: a CUDA graph on the GPU path. The
// orchestration asks the device for a capture, queues work as usual, and keeps the graph.
#pragma once

#include <memory>

#include "runtime/stream.hpp"

namespace gpurelay {

class Graph {
  public:
    virtual ~Graph() = default;
    // Queues one replay of the captured work on `stream`: the whole graph runs after the work
    // queued on `stream` before it, and work queued after it waits for the whole graph.
    virtual void launch(Stream& stream) = 0;
};

// While one lives, work queued on its streams is recorded, not run. Events recorded and waited
// on those streams become the graph's own event nodes, so every replay records them again and
// waits on their latest records at launch, as the same calls would outside a capture.
class GraphCapture {
  public:
    virtual ~GraphCapture() = default;
    // Ends the capture and returns the graph, ready to launch.
    virtual std::unique_ptr<Graph> finish() = 0;
};

}  // namespace gpurelay
