#include "pipeline/pass_frame.hpp"

#include <algorithm>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

PassFrame::PassFrame(const PipelineSpec& spec, Device& device, Transport& transport, Role role,
                     MPI_Comm comm)
    : spec_(spec),
      device_(device),
      transport_(transport),
      comm_(comm),
      role_(role),
      producer_(role != Role::consumer),
      consumer_(role != Role::producer),
      gpu_bus_id_(device.info().pci_bus_id),
      capacity_(spec.tensor_bytes()) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    rank_label_ = "rank " + std::to_string(rank) + " " + std::string(to_string(role));
    if (!consumer_ || role == Role::relay) return;
    auto stream = device.make_stream(false, label("y poisoning"));
    for (std::int64_t k = 0; k < spec.depth; ++k) {
        y_.push_back(device.allocate(spec.tensor_bytes()));
        // NaN bytes, so a y that B never wrote is a mismatch rather than a stale right answer.
        device.fill_async(y_.back().data(), 0xff, spec.tensor_bytes(), *stream);
    }
    stream->synchronize();
}

void PassFrame::meet(const char* barrier) const {
    const Deadline bound(barrier);
    MPI_CHECK(MPI_Barrier(comm_));
}

void PassFrame::resize(std::uint64_t elements) {
    const std::size_t bytes = elements * dtype_size(spec_.dtype);
    if (bytes > capacity_) {
        throw runtime_error("pipeline: tensors of " + std::to_string(bytes) +
                            " bytes, but its buffers hold " + std::to_string(capacity_));
    }
    spec_.elements = elements;
    transport_.set_tensor_bytes(spec_.tensor_bytes());
}

void PassFrame::open_pass(FramedPass& pass, bool overlap, RowSink* sink,
                          std::int64_t first_step) const {
    PassResult& result = pass.result;
    result.overlap = overlap;
    result.first_step = first_step;
    result.timed_from = std::max(spec_.warmup, first_step == 0 ? 0 : first_step + 1);
    result.recorded = RecordedSteps(spec_);
    pass.sink = consumer_ ? sink : nullptr;
    if (pass.sink == nullptr) return;
    for (std::int64_t s = 0; s < first_step; ++s) pass.next_row += spec_.writes_step(s) ? 1 : 0;
    pass.sink_waited_ms = sink->waited_ms();
    pass.sink_checked = sink->checked();
    pass.sink_mismatches = sink->mismatches();
}

PassResult PassFrame::close_pass(FramedPass& pass, std::int64_t end, const void* last_y,
                                 Stream* stream) const {
    PassResult& result = pass.result;
    result.end_step = end;
    result.complete = end >= spec_.steps;
    meet("the barrier at a pass's end");
    if (RowSink* sink = pass.sink) {
        sink->drain();
        result.write_wait_ms = sink->waited_ms() - pass.sink_waited_ms;
        result.spot_checked += sink->checked() - pass.sink_checked;
        result.spot_mismatches += sink->mismatches() - pass.sink_mismatches;
    }
    if (last_y != nullptr && end > result.first_step) {
        // Spot-check samples taken on the host from the last tensor of the pass.
        constexpr std::uint64_t kSpotSamples = 4096;
        Buffer host = device_.allocate_host(spec_.tensor_bytes());
        device_.copy_async(host.data(), last_y, spec_.tensor_bytes(), *stream);
        stream->synchronize();
        result.spot_checked += std::min<std::uint64_t>(kSpotSamples, spec_.elements);
        result.spot_mismatches += with_dtype(spec_.dtype, [&]<typename T>() {
            return spot_check_y(Span<const T>(host.as<T>()), static_cast<T>(spec_.alpha),
                                static_cast<std::uint64_t>(end - 1), spec_.seed, kSpotSamples,
                                spec_.b_form);
        });
    }
    return std::move(result);
}

void PassResult::retire_step(std::int64_t s, const StepTimes& times) {
    recorded.keep(s, times);
    if (s < timed_from) return;
    for (const PhaseInfo& phase : kPhases) phases[index_of(phase.phase)].add(times.*phase.member);
    slowest.offer(s, times.period);
}

void PassResult::retire_counts(std::int64_t s, Counter x, Counter c) {
    recorded.keep_counts(s, x, c);
    x_mismatches += x;
    c_mismatches += c;
}

std::unique_ptr<Pipeline> make_pipeline(const PipelineSpec& spec, Device& device,
                                        Transport& transport, Role role, MPI_Comm comm) {
    return spec.launch == Launch::device ? make_device_roles(spec, device, transport, role, comm)
                                         : make_host_loop(spec, device, transport, role, comm);
}

}  // namespace gpurelay
