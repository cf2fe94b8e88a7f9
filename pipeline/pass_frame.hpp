// Inside pipeline/: the frame of a pass, which its two drivers share, each running a pass's steps
// its own way: the host's pass loop (launch = "host", pass_loop.cpp) and the device's persistent
// roles (launch = "device", device_pass.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace gpurelay {

// launch = "device": C's steps the host queues ahead of the consumer's B. Each waits on the
// consumer's gate, so queueing far ahead costs nothing but events and counters.
inline constexpr std::int64_t kDeviceCWindow = 64;

// Where a pass stands, as both drivers keep it (each adds its own).
struct FramedPass {
    PassResult result;
    RowSink* sink = nullptr;     // where y goes: a consumer's that writes, else null
    std::uint64_t next_row = 0;  // the row of /y that the next written step fills
    // The sink's totals where the pass started (it lives across passes: the pass's share is the
    // difference at the end).
    double sink_waited_ms = 0;
    std::uint64_t sink_checked = 0, sink_mismatches = 0;
};

// What frames a pass, whichever driver runs it: the spec at its current size (in the buffers made
// for the largest), the ranks' meetings, the consumer's y ring, a pass's result from its blank
// start to its settled end, the streams' names, and the ceilings.
class PassFrame : public Pipeline {
  public:
    void resize(std::uint64_t elements) override;
    const PassResult& ceilings() const override { return ceilings_; }
    const PipelineSpec& spec() const { return spec_; }
    Device& device() const { return device_; }
    Transport& transport() const { return transport_; }
    Role role() const { return role_; }
    // A stream's name: "rank 1 consumer: comm stream".
    std::string label(const char* what) const { return rank_label_ + ": " + what; }
    // Step s's y slot (none on a relay's middle stage, whose B writes its outgoing slot).
    void* y(std::int64_t s) const { return y_[static_cast<std::size_t>(s) % y_.size()].data(); }
    // Every rank of the run at a barrier, bounded by timeout_s like every wait of a pass.
    void meet(const char* barrier) const;

  protected:
    // Makes the ring of y slots of a consumer that keeps y (NaN until B writes them).
    PassFrame(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
              MPI_Comm comm);
    // A pass's start: nothing retired yet, its timings from the step after the first it runs
    // (which is cold: new connections), and the sink's totals.
    void open_pass(FramedPass& pass, bool overlap, RowSink* sink, std::int64_t first_step) const;
    // A pass's end after step end - 1, with every stream of the driver idle: the ranks met, the
    // writer drained, and the host's own check of the last y (`last_y`, copied on `stream`; both
    // null on a rank that consumes nothing).
    PassResult close_pass(FramedPass& pass, std::int64_t end, const void* last_y,
                          Stream* stream) const;

    PipelineSpec spec_;  // its size as it is now
    Device& device_;
    Transport& transport_;
    MPI_Comm comm_;  // the ranks that run the pipeline together: they meet at its barriers
    Role role_;
    bool producer_, consumer_;
    std::string gpu_bus_id_;  // whose clocks the timed steps sample ("" on the CPU path)
    PassResult ceilings_;     // what the last calibrating pass measured (no steps when none did)

  private:
    std::size_t capacity_;  // bytes of the largest tensor, which every buffer holds
    std::string rank_label_;
    std::vector<Buffer> y_;
};

std::unique_ptr<Pipeline> make_host_loop(const PipelineSpec& spec, Device& device,
                                         Transport& transport, Role role, MPI_Comm comm);
std::unique_ptr<Pipeline> make_device_roles(const PipelineSpec& spec, Device& device,
                                            Transport& transport, Role role, MPI_Comm comm);

}  // namespace gpurelay
