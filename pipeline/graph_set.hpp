// Steps as CUDA graphs: G = graph_steps consecutive steps as one graph over all the rank's
// streams, captured once per ring position and replayed (graph_set.cpp says how).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/step.hpp"
#include "runtime/graph.hpp"

namespace gpurelay {

class GraphSet {
  public:
    GraphSet(const PipelineSpec& spec, Device& device, std::size_t ring);

    // Captures every graph the pass can launch, every stream idle.
    void capture(StepSchedule& schedule, StepTimer& timer, Transport& transport,
                 PassResult& result);
    // Steps s .. s + G - 1 as one launch of their graph, then their writes (eager, on the io
    // stream). `entering`: the first graph after eager steps, with every stream idle.
    void launch(std::int64_t s, bool entering, StepSchedule& schedule, StepTimer& timer,
                std::uint64_t& next_row, PassResult& result);
    Stream& launch_stream(const PassPlan& plan) const { return *plan.graph_streams.front(); }

  private:
    StepArg step_arg(std::int64_t s) const;
    std::uint64_t* host_word(bool next) const;
    std::size_t index(std::int64_t first, bool timed) const;

    const PipelineSpec& spec_;
    Device& device_;
    std::size_t ring_;
    // The current cycle's first step, which a graph's kernels read on the device, and on the host
    // where the first graph after eager steps ([0]) and the cycle's last graph ([1]) copy it from.
    Buffer host_words_, device_word_;
    // Last: destroyed first, before the events and buffers their nodes name.
    std::vector<std::unique_ptr<Graph>> graphs_;
};

}  // namespace gpurelay
