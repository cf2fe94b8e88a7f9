// Stream work recorded once (under a device's capture) and replayed with one launch: a CUDA graph.
#pragma once

#include <memory>

#include "runtime/stream.hpp"

namespace gpurelay {

class Graph {
  public:
    virtual ~Graph() = default;
    // Queues one replay on `stream`; the whole graph follows earlier work and precedes later work.
    virtual void launch(Stream& stream) = 0;
};

// While one lives, work queued on its streams is recorded, not run. An ordering event recorded on
// one stream and waited on by another becomes an edge between the graph's nodes, so a capture's
// waits must name events recorded in it; a timing event, a node each replay records for the host.
class GraphCapture {
  public:
    virtual ~GraphCapture() = default;
    // Ends the capture and returns the graph, ready to launch.
    virtual std::unique_ptr<Graph> finish() = 0;
};

}  // namespace gpurelay
