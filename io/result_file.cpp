// An open result file: its rows written independently by each rank, flushes, and the close
// that marks it complete and gives it its final name.
#include "io/result_file.hpp"

#include <hdf5.h>

#include <exception>

#include "io/h5_call.hpp"
#include "io/h5_data.hpp"
#include "io/h5_types.hpp"
#include "io/result_file_state.hpp"
#include "io/result_layout.hpp"
#include "io/result_target.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

H5PropertyList parallel_file_access(MPI_Comm comm) {
    H5PropertyList file_access(h5_check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)"));
    h5_check(H5Pset_fapl_mpio(file_access.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    // Metadata reads by one rank broadcast to the others, and rank 0 alone writes it out
    // collectively: fewer small requests on a parallel file system.
    h5_check(H5Pset_all_coll_metadata_ops(file_access.get(), true), "H5Pset_all_coll_metadata_ops");
    h5_check(H5Pset_coll_metadata_write(file_access.get(), true), "H5Pset_coll_metadata_write");
    return file_access;
}

H5PropertyList independent_transfer_list() {
    H5PropertyList transfer(h5_check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(dataset transfer)"));
    h5_check(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_INDEPENDENT),
             "H5Pset_dxpl_mpio(independent)");
    return transfer;
}

ResultFile::ResultFile(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
ResultFile::ResultFile(ResultFile&&) noexcept = default;
ResultFile& ResultFile::operator=(ResultFile&&) noexcept = default;
ResultFile::~ResultFile() = default;

ResultFile::State& ResultFile::open_state(const char* call) {
    if (!state_) throw runtime_error(std::string("result file: ") + call + " on a moved-from file");
    if (state_->closed) {
        throw runtime_error(std::string("result file: ") + call + " after close of '" +
                            state_->partial_path + "'");
    }
    return *state_;
}

void ResultFile::write_y_row(std::size_t set, std::uint64_t pair, std::uint64_t row,
                             const void* data) {
    State& state = open_state("write_y_row");
    if (set >= state.row_sets.size()) {
        throw runtime_error("result file: write_y_row, but the file has no /y " +
                            (state.row_sets.empty() ? std::string("(no written steps)")
                                                    : "set " + std::to_string(set)));
    }
    if (pair >= state.pairs || row >= state.rows) {
        throw runtime_error("result file: /y row (pair " + std::to_string(pair) + ", row " +
                            std::to_string(row) + ") is outside [" + std::to_string(state.pairs) +
                            ", " + std::to_string(state.rows) + "]");
    }
    const State::Rows& rows = state.row_sets[set];
    QuietHdf5Errors quiet;
    const hsize_t start[3] = {pair, row, 0};
    const hsize_t count[3] = {1, 1, rows.elements};
    write_hyperslab(rows.y.get(), start, count, rows.elements, memory_type(state.y_type),
                    state.independent_transfer.get(), data,
                    rows.group + "/y pair " + std::to_string(pair) + " row " + std::to_string(row));
}

void ResultFile::write_row_step(std::size_t set, std::uint64_t row, std::int64_t step) {
    State& state = open_state("write_row_step");
    if (set >= state.row_sets.size() || row >= state.rows) {
        throw runtime_error("result file: /step row " + std::to_string(row) + " of set " +
                            std::to_string(set) + " is not in the file");
    }
    const State::Rows& rows = state.row_sets[set];
    QuietHdf5Errors quiet;
    const hsize_t start = row, count = 1;
    write_hyperslab(rows.step.get(), &start, &count, 1, H5T_NATIVE_INT64,
                    state.independent_transfer.get(), &step,
                    rows.group + "/step row " + std::to_string(row));
}

void ResultFile::write_matrix_row(const std::string& path, std::uint64_t row, const void* data) {
    State& state = open_state("write_matrix_row");
    const auto found = state.matrices.find(matrix_key(path));
    if (found == state.matrices.end()) {
        throw runtime_error("result file: no matrix '" + path + "' in the layout");
    }
    const State::Matrix& matrix = found->second;
    if (row >= matrix.rows) {
        throw runtime_error("result file: row " + std::to_string(row) + " of '" + path +
                            "' is outside [" + std::to_string(matrix.rows) + ", " +
                            std::to_string(matrix.cols) + "]");
    }
    QuietHdf5Errors quiet;
    const hsize_t start[2] = {row, 0};
    const hsize_t count[2] = {1, matrix.cols};
    write_hyperslab(matrix.dataset.get(), start, count, matrix.cols, memory_type(matrix.type),
                    state.independent_transfer.get(), data, path + " row " + std::to_string(row));
}

void ResultFile::flush() {
    State& state = open_state("flush");
    // Collective: a peer that stops in (or before) its flush must not hold this rank in HDF5.
    const Deadline bound("HDF5 flush of '" + state.partial_path + "'");
    QuietHdf5Errors quiet;
    state.flush_everywhere();
}

void ResultFile::write_attributes(const GroupAttributes& group_attributes) {
    State& state = open_state("write_attributes");
    const Deadline bound("HDF5 attributes and flush of '" + state.partial_path + "'");
    QuietHdf5Errors quiet;
    agree(state.comm, [&] { write_group_attributes(state.file.get(), group_attributes); });
    state.flush_everywhere();
}

void ResultFile::close(bool complete, const Attributes& attributes,
                       const GroupAttributes& group_attributes) {
    State& state = open_state("close");
    validate_attributes(attributes);
    // Collective, as are the rename's agreement and the communicator's release.
    const Deadline bound("HDF5 close of '" + state.partial_path + "'");
    QuietHdf5Errors quiet;

    // The file is closed whatever happened before; H5Fclose writes the last metadata. The
    // agreement is also the barrier that lets rank 0 rename only after every rank closed it.
    agree(state.comm, [&] {
        std::exception_ptr first_failure;
        try {
            state.write_root_attributes(attributes);
            write_group_attributes(state.file.get(), group_attributes);
            write_attribute(state.file.get(), std::string(complete_attribute),
                            std::int64_t{complete ? 1 : 0});
        } catch (...) {
            first_failure = std::current_exception();
        }
        state.closed = true;
        try {
            state.close_objects();
            h5_check(state.file.close(), "H5Fclose('" + state.partial_path + "')");
        } catch (...) {
            if (!first_failure) first_failure = std::current_exception();
        }
        if (first_failure) std::rethrow_exception(first_failure);
    });

    if (complete) {
        agree(state.comm, [&] {
            if (state.rank != 0) return;
            publish_partial(state.partial_path, state.path, state.overwrite);
        });
    }
    MPI_CHECK(MPI_Comm_free(&state.comm));
}

const std::string& ResultFile::path() const {
    static const std::string none;
    return state_ ? state_->path : none;
}

const std::string& ResultFile::partial_path() const {
    static const std::string none;
    return state_ ? state_->partial_path : none;
}

}  // namespace gpurelay
