// A pass the device drives itself (launch = "device"): one persistent role per side runs every
// step (kernels/handoff.hpp), the host only launches them, feeds C beside them, copies y out,
// votes on a stop and waits, bounded, for them to end; each step's times come from the roles'
// own stamps. DevicePass::run is the pass top to bottom (device_pass.cpp).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/handoff.hpp"
#include "pipeline/pipeline.hpp"

namespace gpurelay {

// C's steps the host queues ahead of the consumer's B: each waits on the consumer's gate, so
// queueing far ahead costs nothing but events and counters.
inline constexpr std::int64_t kDeviceCWindow = 64;

// The words of a pass that the host, the streams and the roles share (device memory on a GPU),
// each on its own line; zeroed before each pass.
struct PassWords {
    alignas(64) std::uint32_t stop;      // the host to the producer: stop (read once a step)
    alignas(64) std::uint32_t gate;      // the consumer to C: C of step s may start at s + 1
    alignas(64) std::uint32_t c_done;    // C to the consumer: C of step s done at s + 1
    alignas(64) std::uint32_t y_copied;  // the host's io stream to the consumer: y of s out, s + 1
    alignas(64) unsigned char producer_workspace[kHandOffWorkspaceBytes];
    alignas(64) unsigned char consumer_workspace[kHandOffWorkspaceBytes];
};

class DevicePass {
  public:
    // Allocates the pass's buffers, streams and words for `spec`'s (largest) size, and checks
    // that both roles' blocks fit on the GPU together (a usage error otherwise).
    DevicePass(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
               MPI_Comm comm);
    ~DevicePass();
    DevicePass(const DevicePass&) = delete;
    DevicePass& operator=(const DevicePass&) = delete;

    // One pass, as Pipeline::run (pipeline.hpp); `on_step` is called for each step once this
    // rank's last role has done it, and its stop reaches the roles a few steps later.
    template <typename T>
    PassResult run(bool overlap, RowSink* sink, const StepCallback& on_step,
                   std::int64_t first_step);
    void resize(std::uint64_t elements);
    const PipelineSpec& spec() const { return spec_; }
    // None: the ceilings are the host-launched phases' (an empty pass).
    const PassResult& ceilings() const { return ceilings_; }

    struct Pass;

  private:
    // The roles' status as the host last read it.
    struct Progress {
        std::int64_t done = 0;  // this rank's last role's steps done
        bool ended = false;     // every role of this rank has ended
        std::int64_t end_step = 0;
    };
    Pass begin(bool overlap, RowSink* sink, std::int64_t first_step);
    void meet(const char* barrier);
    template <typename T>
    void launch_roles(Pass& pass);
    void watch(Pass& pass, const StepCallback& on_step);
    Progress look(const Pass& pass) const;
    void feed_c(Pass& pass, std::int64_t done);
    void queue_c(std::int64_t s);
    void retire_c(Pass& pass, std::int64_t s);
    void copy_rows(Pass& pass, std::int64_t done);
    void end_streams();
    void read_stamps(Pass& pass);
    template <typename T>
    PassResult finish(Pass& pass);
    void synchronize_all();
    PassWords* words() const { return static_cast<PassWords*>(words_.data()); }
    RoleStatus* status(bool consumer) const {
        return static_cast<RoleStatus*>(status_.data()) + (consumer ? 1 : 0);
    }

    PipelineSpec spec_;
    std::size_t capacity_;  // bytes of the largest tensor, which every buffer holds
    Device& device_;
    Transport& transport_;
    MPI_Comm comm_;
    bool producer_, consumer_;
    std::string gpu_bus_id_;
    PassResult ceilings_;
    std::vector<Buffer> y_;
    Buffer c_, words_, status_, producer_stamps_, consumer_stamps_, written_, c_counts_;
    // C's ring of kDeviceCWindow steps: its times, and its check done.
    std::vector<std::unique_ptr<Event>> c_start_, c_end_, c_checked_;
    // After the buffers: destroyed first, so no stream's queued work outlives what it uses.
    std::unique_ptr<Stream> producer_role_, consumer_role_, compute_, io_;
};

}  // namespace gpurelay
