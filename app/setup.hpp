// Set-up that every rank agrees on before any timed work: pairs, the device, its memory and the
// transport; each step succeeds on every rank or fails on every rank with one message.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "mpi/pairing.hpp"
#include "mpi/session.hpp"
#include "pipeline/pipeline.hpp"
#include "runtime/device.hpp"
#include "transport/transport.hpp"

namespace gpurelay {

// Pinned buffers of rows on their way to the file, per consumer that writes /y.
inline constexpr int kWriterBuffers = 3;

struct Setup {
    Config config;
    PairPlacement placement;
    std::unique_ptr<Device> device;
    DeviceInfo device_info;
    std::unique_ptr<Transport> transport;
    PipelineSpec spec;           // what the pipeline runs
    MemoryPlan memory;           // what the pipeline and the transport's slots hold on this rank
    std::string transport_note;  // why auto chose the transport, when it had to choose
    std::vector<std::string> gpu_keys;  // every rank's "host bus-id" ("host cpu" on the CPU path)
    double output_bytes = 0;            // the result file's size once complete (an upper bound)
};

// Collective: places the pairs, opens the device, checks the path and the resources (exit 2 with
// the figures) and opens the transport, which every wait on the GPU then watches. Throws
// AgreedError, the same on every rank, when a step fails anywhere.
Setup set_up(const MpiSession& mpi, const Config& config);

// Collective, once the pipeline's host streams exist: the host-wait policy (runtime/poll.hpp) from
// host_wait, for `auto` from the path and each node's working threads against its cores.
void choose_host_wait(const Config& config, bool cuda_path);

}  // namespace gpurelay
