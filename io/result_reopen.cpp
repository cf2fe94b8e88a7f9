// Resuming: reopening a PATH.partial that a stopped run left, once rank 0 has checked that it
// fits this run, and reading a root attribute of a file serially.
#include <hdf5.h>

#include <filesystem>
#include <system_error>
#include <variant>
#include <vector>

#include "io/h5_call.hpp"
#include "io/h5_data.hpp"
#include "io/result_file.hpp"
#include "io/result_file_state.hpp"
#include "io/result_layout.hpp"
#include "io/result_target.hpp"
#include "mpi/agreement.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

// Rank 0 only, serially, before any rank opens the file for writing: the existing PATH.partial
// must be an unfinished result file with every dataset of `layout`, /step holding its steps.
void check_resumable(const std::string& partial_path, const ResultFileLayout& layout) {
    H5File file = open_serial_read_only(partial_path, "resume");
    const std::string prefix = "cannot resume '" + partial_path + "': ";
    const std::optional<AttributeValue> complete =
        read_attribute(file.get(), std::string(complete_attribute),
                       "attribute 'complete' of '" + partial_path + "'");
    if (!complete) throw usage_error(prefix + "it has no 'complete' attribute");
    const auto* complete_value = std::get_if<std::int64_t>(&*complete);
    if (complete_value == nullptr) {
        throw usage_error(prefix + "attribute 'complete' is not an integer");
    }
    if (*complete_value != 0) {
        throw usage_error("nothing to resume: '" + partial_path + "' is complete");
    }
    for (const DeclaredDataset& declared : declared_datasets(layout)) {
        H5Dataset dataset = open_declared_dataset(file.get(), partial_path, declared);
        // Rows are placed by their index into written_steps, so the steps must be the same.
        // (Each /step is the one 1-D dataset of its set; matrices are 2-D.)
        if (declared.dims.size() == 1) {
            std::vector<std::int64_t> steps(layout.written_steps.size());
            h5_check(H5Dread(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             steps.data()),
                     "H5Dread", declared.name);
            if (steps != layout.written_steps) {
                throw usage_error(prefix + declared.name +
                                  " holds other steps than this run writes");
            }
        }
    }
}

}  // namespace

ResultFile ResultFile::reopen(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    std::unique_ptr<State> state = State::make(comm, path, overwrite, layout, attributes);

    // Rank 0 reads the .partial serially and closes it again before the collective open, so every
    // rank gets the same usage error and nobody writes to a file that does not fit.
    agree(state->comm, [&] {
        if (state->rank != 0) return;
        // (An empty path is reported as such by check_final_path.)
        if (!path.empty()) {
            std::error_code error;
            if (!fs::exists(fs::status(state->partial_path, error))) {
                throw usage_error("nothing to resume: '" + state->partial_path +
                                  "' does not exist");
            }
        }
        check_final_path(state->path, overwrite);
        check_resumable(state->partial_path, layout);
    });
    agree(state->comm, [&] { state->open_objects(layout, attributes); });
    // The new attributes reach the disk before the first row is written.
    state->flush_everywhere();
    return ResultFile(std::move(state));
}

std::optional<AttributeValue> ResultFile::read_root_attribute(const std::string& file_path,
                                                              const std::string& name) {
    QuietHdf5Errors quiet;
    std::error_code error;
    if (!fs::exists(fs::status(file_path, error))) {
        return std::nullopt;
    }
    H5File file = open_serial_read_only(file_path, "read");
    return read_attribute(file.get(), name, "attribute '" + name + "' of '" + file_path + "'");
}

}  // namespace gpurelay
