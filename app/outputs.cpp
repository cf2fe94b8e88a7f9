#include "app/outputs.hpp"

#include <csignal>
#include <type_traits>

#include "app/provenance.hpp"
#include "io/result_schema.hpp"
#include "kernels/kernels.hpp"
#include "mpi/agreement.hpp"
#include "mpi/wait.hpp"
#include "pipeline/phase.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

constexpr std::uint64_t kRowSpotSamples = 1024;

// Tests only (debug_stop_flush, debug_stop_close): the chosen rank stops itself here, as a peer
// stopped by a signal would, so that the others' next collective call is the wait under test.
void debug_stop_if(const Config& config, int rank, bool here) {
    if (here && rank == config.debug_stop_rank) std::raise(SIGSTOP);
}

// The result writer as the pipeline's way out for y.
class WriterSink final : public RowSink {
  public:
    explicit WriterSink(ResultWriter& writer) : writer_(writer) {}
    Slot acquire() override {
        const ResultWriter::Slot slot = writer_.acquire();
        return {slot.index, slot.host, slot.ready};
    }
    void submit(const Slot& slot, std::uint64_t row, std::int64_t step) override {
        writer_.submit({slot.index, slot.host, slot.ready}, row, step);
    }
    void drain() override { writer_.drain(); }
    double waited_ms() const override { return writer_.waited_ms(); }
    std::uint64_t checked() const override { return writer_.checked(); }
    std::uint64_t mismatches() const override { return writer_.mismatches(); }

  private:
    ResultWriter& writer_;
};

ResultSchema schema_of(const Setup& setup, const std::vector<bool>& passes, int size) {
    const Config& config = setup.config;
    ResultSchema::Shape shape;
    shape.pairs = static_cast<std::uint64_t>(setup.placement.pairs);
    shape.ranks = static_cast<std::uint64_t>(size);
    shape.recorded = static_cast<std::uint64_t>(config.recorded().columns);
    shape.elements = config.elements;
    shape.sizes = config.sizes;
    shape.y_type = with_dtype(config.dtype, []<typename T>() { return element_type<T>(); });
    shape.written_steps = config.written_steps();
    shape.passes = passes;
    for (const PhaseInfo& phase : kPhases) shape.phases.emplace_back(phase.name);
    return ResultSchema(shape);
}

// Each row of /y is spot-checked on the host before it is written, against the formula (for an
// all-reduce, of the group's sum), for the size `config` runs.
ResultWriter::RowCheck row_check(const Config& config, const PairPlacement& placement) {
    return with_dtype(config.dtype, [&]<typename T>() {
        return ResultWriter::RowCheck(
            [alpha = static_cast<T>(config.alpha), seed = config.seed, elements = config.elements,
             form = received_form(config, placement)](const void* row, std::int64_t step) {
                const Span<const T> y{static_cast<const T*>(row), elements};
                return ResultWriter::RowCheckResult{
                    std::min(kRowSpotSamples, elements),
                    spot_check_y(y, alpha, static_cast<std::uint64_t>(step), seed, kRowSpotSamples,
                                 form)};
            });
    });
}

// Collective: every rank's placement (its cores, their NUMA nodes, its GPU's node).
std::vector<Placement> gather_placements(const Setup& setup, int size) {
    const Placement mine = this_process_placement(setup.device_info.pci_bus_id);
    // One gather: the fields joined by a character none of them holds.
    const std::vector<std::string> joined =
        allgather_strings(mine.cores + '|' + mine.core_numa + '|' + mine.gpu_numa, size);
    std::vector<Placement> placements;
    for (const std::string& text : joined) {
        const std::size_t first = text.find('|'), second = text.find('|', first + 1);
        placements.push_back({.cores = text.substr(0, first),
                              .core_numa = text.substr(first + 1, second - first - 1),
                              .gpu_numa = text.substr(second + 1)});
    }
    return placements;
}

}  // namespace

Outputs Outputs::open(const MpiSession& mpi, const Setup& setup, const std::vector<bool>& passes) {
    const Config& config = setup.config;
    const int size = mpi.world_size();
    const ResultFileLayout layout = schema_of(setup, passes, size).layout();
    Outputs outputs;
    outputs.hosts = allgather_strings(mpi.host_name(), size);
    const std::vector<std::string> devices = allgather_strings(
        setup.device_info.name +
            (setup.device_info.pci_bus_id.empty() ? "" : " " + setup.device_info.pci_bus_id),
        size);
    const std::vector<Placement> placements = gather_placements(setup, size);
    // A collective step of the file (a rank stuck on a hung file system) is bounded like every
    // other wait.
    const Deadline deadline(config.timeout(), "making the result file");
    agree(MPI_COMM_WORLD, [&] {
        const Attributes attributes = root_attributes(setup, outputs.hosts, devices, placements);
        outputs.file.emplace(config.resume
                                 ? ResultFile::reopen(MPI_COMM_WORLD, config.output,
                                                      config.overwrite, layout, attributes)
                                 : ResultFile::create(MPI_COMM_WORLD, config.output,
                                                      config.overwrite, layout, attributes));
    });
    const bool consumer = setup.placement.role != Role::producer;
    if (consumer && !layout.written_steps.empty()) {
        // Buffers for the largest size; each size switches the writer to its rows.
        const Config first = config.sized(config.elements);
        outputs.writer = std::make_unique<ResultWriter>(
            *setup.device, *outputs.file, static_cast<std::uint64_t>(setup.placement.pair),
            setup.spec.tensor_bytes(), kWriterBuffers, row_check(first, setup.placement));
        outputs.sink = std::make_unique<WriterSink>(*outputs.writer);
    }
    return outputs;
}

void Outputs::start_size(std::size_t index, const Config& size_config,
                         const PairPlacement& placement) {
    if (!writer) return;
    writer->switch_rows(index, size_config.tensor_bytes(), row_check(size_config, placement));
}

void Outputs::flush(const Config& config, int rank, std::int64_t flushes) {
    if (writer) writer->drain();
    debug_stop_if(config, rank, flushes == config.debug_stop_flush);
    file->flush();
}

void Outputs::file_pass(const Setup& setup, const std::string& group, bool overlap,
                        const PassResult& result, int rank) {
    const RecordedSteps::Columns& kept = result.recorded.columns();
    const std::size_t n = kept.steps.size(), oldest = result.recorded.oldest();
    if (n == 0) return;
    // Each row in the file's order: the oldest kept step first.
    const auto file_row = [&](const std::string& path, std::uint64_t row, const auto& column) {
        std::vector<std::remove_cvref_t<decltype(column(0))>> values(n);
        for (std::size_t i = 0; i < n; ++i) values[i] = column((oldest + i) % n);
        file->write_matrix_row(path, row, values.data());
    };
    const auto rank_row = static_cast<std::uint64_t>(rank);
    for (const PhaseInfo& phase : kPhases) {
        file_row(ResultSchema::timings_path(group, overlap, phase.name), rank_row,
                 [&](std::size_t i) { return kept.times[i].*phase.member; });
    }
    file_row(ResultSchema::step_index_path(group, overlap), rank_row,
             [&](std::size_t i) { return kept.steps[i]; });
    if (setup.placement.role == Role::producer) return;
    const auto pair = static_cast<std::uint64_t>(setup.placement.pair);
    file_row(ResultSchema::x_mismatches_path(group, overlap), pair,
             [&](std::size_t i) { return kept.x_mismatches[i]; });
    file_row(ResultSchema::c_mismatches_path(group, overlap), pair,
             [&](std::size_t i) { return kept.c_mismatches[i]; });
}

void Outputs::file_histograms(const std::string& group, const PassSummary& pass, int rank) {
    if (rank != 0) return;
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
        const LogHistogram& h = pass.histograms[p];
        const double sums[ResultSchema::kHistogramSums] = {h.sums().sum, h.sums().squares,
                                                           h.least(), h.most()};
        file->write_matrix_row(ResultSchema::histogram_counts_path(group, pass.overlap), p,
                               h.counts().data());
        file->write_matrix_row(ResultSchema::histogram_sums_path(group, pass.overlap), p, sums);
    }
}

void Outputs::file_size(std::size_t index, const std::string& group, const RunSummary& summary,
                        std::int64_t sizes_failed) {
    GroupAttributes groups = pass_attributes(MPI_COMM_WORLD, summary, group);
    groups.push_back({group, verdict_attributes(summary, summary.verified())});
    groups.push_back(
        {"/",
         {{"sizes_done", static_cast<std::int64_t>(index + 1)}, {"sizes_failed", sizes_failed}}});
    file->write_attributes(groups);
}

void Outputs::end_writer() {
    sink.reset();
    writer.reset();
}

void Outputs::close(const Config& config, int rank, bool complete, const Attributes& attributes,
                    const GroupAttributes& groups) {
    debug_stop_if(config, rank, config.debug_stop_close);
    file->close(complete, attributes, groups);
    file.reset();
}

}  // namespace gpurelay
