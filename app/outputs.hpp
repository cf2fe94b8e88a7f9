// The writing: the result file, the writer of /y, what each pass and size files, flush and close.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/setup.hpp"
#include "io/result_file.hpp"
#include "io/result_writer.hpp"
#include "mpi/session.hpp"
#include "pipeline/pipeline.hpp"
#include "report/reduce.hpp"

namespace gpurelay {

// The result file, the writer of /y (consumers, when rows are kept), and every rank's host.
struct Outputs {
    std::vector<std::string> hosts;
    std::optional<ResultFile> file;
    std::unique_ptr<ResultWriter> writer;
    std::unique_ptr<RowSink> sink;  // the writer, as the pipeline sees it

    // Collective: creates the result file (or reopens a resumed run's .partial) for `passes`.
    static Outputs open(const MpiSession& mpi, const Setup& setup, const std::vector<bool>& passes);

    // Between two sizes, every stream idle: the writer's rows go to size `index`'s /y.
    void start_size(std::size_t index, const Config& size_config, const PairPlacement& placement);
    // Collective, at a step boundary of the last pass: the writer drained (one thread at a time
    // inside HDF5), then the file flushed. `flushes`: this one's number, for debug_stop_flush.
    void flush(const Config& config, int rank, std::int64_t flushes);
    // Each rank files its kept steps of a pass: timings under its rank, counts under its pair.
    void file_pass(const Setup& setup, const std::string& group, bool overlap,
                   const PassResult& result, int rank);
    // Rank 0 files a pass's histograms, summed over every rank (the others file nothing).
    void file_histograms(const std::string& group, const PassSummary& pass, int rank);
    // Collective, several sizes: a finished size's attributes in its group, and on the root how
    // many sizes are done and failed.
    void file_size(std::size_t index, const std::string& group, const RunSummary& summary,
                   std::int64_t sizes_failed);
    // Before the close's collective calls, so no writer thread is inside HDF5 or MPI beside them.
    void end_writer();
    // Collective, after end_writer; an incomplete file stays PATH.partial.
    void close(const Config& config, int rank, bool complete, const Attributes& attributes,
               const GroupAttributes& groups);
};

}  // namespace gpurelay
