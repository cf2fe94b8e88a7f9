// An open result file (result_file.hpp): made or reopened, rows written, flushed and closed.
#include "io/result_file.hpp"

#include <hdf5.h>

#include <exception>
#include <filesystem>
#include <map>
#include <system_error>

#include "io/h5.hpp"
#include "io/result_layout.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

H5PropertyList parallel_file_access(MPI_Comm comm) {
    H5PropertyList file_access(h5_check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)"));
    h5_check(H5Pset_fapl_mpio(file_access.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    // Metadata reads by one rank broadcast to the others, and rank 0 alone writes it out
    // collectively: fewer small requests on a parallel file system.
    h5_check(H5Pset_all_coll_metadata_ops(file_access.get(), true), "H5Pset_all_coll_metadata_ops");
    h5_check(H5Pset_coll_metadata_write(file_access.get(), true), "H5Pset_coll_metadata_write");
    return file_access;
}

}  // namespace

struct ResultFile::State {
    struct Matrix {
        H5Dataset dataset;
        ElementType type;
        std::uint64_t rows;
        std::uint64_t cols;
    };
    struct Rows {
        H5Dataset y, step;
        std::uint64_t elements = 0;
        std::string group;
    };

    std::string path;
    std::string partial_path;
    bool overwrite = false;
    // Our own duplicate, so that agreeing on outcomes never meets the caller's collectives.
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    std::uint64_t pairs = 0;
    std::uint64_t rows = 0;
    ElementType y_type = ElementType::float32;

    // Declared first, so destroyed last: the file closes only after its datasets.
    H5File file;
    H5PropertyList independent_transfer;
    std::vector<Rows> row_sets;  // none without written steps
    std::map<std::string, Matrix> matrices;
    bool closed = false;

    // Not collective: checks the layout and the attributes (the same on every rank, so they fail
    // everywhere or nowhere, before any collective), then duplicates `comm`.
    State(MPI_Comm caller, const std::string& output, bool replace, const ResultFileLayout& layout,
          const Attributes& attributes)
        : path(output),
          partial_path(output + ".partial"),
          overwrite(replace),
          pairs(layout.pairs),
          rows(layout.written_steps.size()),
          y_type(layout.y_type) {
        validate_layout(layout);
        validate_attributes(attributes);
        MPI_CHECK(MPI_Comm_dup(caller, &comm));
        MPI_CHECK(MPI_Comm_rank(comm, &rank));
    }

    ~State() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized != 0) {
            // MPI_Finalize already shut HDF5 down (and closed its files); touching either library
            // now would fail. Forget the ids.
            each_object([](auto& id) { id.release(); });
            file.release();
            return;
        }
        // Collective (a close that close() did not make, on a failure's way out).
        const Deadline bound("HDF5 close of '" + partial_path + "' after a failure");
        QuietHdf5Errors quiet;
        close_objects();
        file.reset();
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }

    template <typename F>
    void each_object(F f) {
        for (auto& entry : matrices) f(entry.second.dataset);
        for (Rows& set : row_sets) {
            f(set.y);
            f(set.step);
        }
        f(independent_transfer);
    }
    void close_objects() noexcept {
        each_object([](auto& id) { id.reset(); });
    }

    // Collective: what is written so far reaches the disk, so a job that dies later leaves a
    // readable .partial; every rank learns whether it worked.
    void flush_everywhere() {
        agree(comm, [&] {
            h5_check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "H5Fflush('" + partial_path + "')");
        });
    }

    // Collective: opens the .partial (checked on rank 0 already) and its datasets and writes
    // `attributes`; `complete` stays 0 and /step as it is.
    void open_objects(const ResultFileLayout& layout, const Attributes& attributes) {
        file = H5File(
            h5_check(H5Fopen(partial_path.c_str(), H5F_ACC_RDWR, parallel_file_access(comm).get()),
                     "H5Fopen('" + partial_path + "')"));
        // Rows are written by one rank at its own pace, so raw data goes independently.
        independent_transfer =
            H5PropertyList(h5_check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(dataset transfer)"));
        h5_check(H5Pset_dxpl_mpio(independent_transfer.get(), H5FD_MPIO_INDEPENDENT),
                 "H5Pset_dxpl_mpio(independent)");
        // The declared order: each set's y and step, then the matrices as listed.
        const std::vector<DeclaredDataset> declared = declared_datasets(layout);
        std::size_t next = 0;
        const auto open_next = [&] {
            return open_declared_dataset(file.get(), partial_path, declared[next++]);
        };
        if (!layout.written_steps.empty()) {
            for (const RowSet& set : gpurelay::row_sets(layout)) {
                row_sets.push_back({open_next(), open_next(), set.elements, set.group});
            }
        }
        for (const MatrixSpec& spec : layout.matrices) {
            matrices.emplace(matrix_key(spec.path),
                             Matrix{open_next(), spec.type, spec.rows, spec.cols});
        }
        write_root_attributes(attributes);
    }

    void write_root_attributes(const Attributes& attributes) {
        for (const auto& [name, value] : attributes) write_attribute(file.get(), name, value);
    }
};

ResultFile::ResultFile(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
ResultFile::ResultFile(ResultFile&&) noexcept = default;
ResultFile& ResultFile::operator=(ResultFile&&) noexcept = default;
ResultFile::~ResultFile() = default;

ResultFile ResultFile::create(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    auto state = std::make_unique<State>(comm, path, overwrite, layout, attributes);
    // One rank looks at the file system and makes the file, so every rank reports the same thing
    // and no rank waits in a collective call that failed on another.
    agree(state->comm, [&] {
        if (state->rank != 0) return;
        check_target(state->path, overwrite);
        make_partial(state->partial_path, layout, attributes);
    });
    agree(state->comm, [&] { state->open_objects(layout, {}); });
    return ResultFile(std::move(state));
}

ResultFile ResultFile::reopen(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    auto state = std::make_unique<State>(comm, path, overwrite, layout, attributes);
    // Rank 0 reads the .partial serially and closes it again before the collective open, so every
    // rank gets the same usage error and nobody writes to a file that does not fit.
    agree(state->comm, [&] {
        if (state->rank != 0) return;
        // (An empty path is reported as such by check_final_path.)
        std::error_code error;
        if (!path.empty() && !fs::exists(fs::status(state->partial_path, error))) {
            throw usage_error("nothing to resume: '" + state->partial_path + "' does not exist");
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
    if (!fs::exists(fs::status(file_path, error))) return std::nullopt;
    H5File file = open_serial_read_only(file_path, "read");
    return read_attribute(file.get(), name, "attribute '" + name + "' of '" + file_path + "'");
}

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
