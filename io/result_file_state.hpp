// Inside io/: what an open ResultFile holds (its ids, its communicator, the layout's sizes),
// shared by the files that create, reopen and write it.
#pragma once

#include <hdf5.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/h5_call.hpp"
#include "io/h5_data.hpp"
#include "io/h5_handle.hpp"
#include "io/result_file.hpp"
#include "io/result_layout.hpp"
#include "mpi/agreement.hpp"
#include "mpi/error.hpp"
#include "mpi/wait.hpp"

namespace gpurelay {

// File access for every rank of `comm` through MPI-IO.
H5PropertyList parallel_file_access(MPI_Comm comm);
// Rows are written by one rank at its own pace, so raw data goes independently.
H5PropertyList independent_transfer_list();

struct ResultFile::State {
    struct Matrix {
        H5Dataset dataset;
        ElementType type;
        std::uint64_t rows;
        std::uint64_t cols;
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
    // Each row set's /y and /step (none without written steps), and its rows' length.
    struct Rows {
        H5Dataset y, step;
        std::uint64_t elements = 0;
        std::string group;
    };
    std::vector<Rows> row_sets;
    std::map<std::string, Matrix> matrices;
    bool closed = false;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;

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

    // `f` on every id but the file's.
    template <typename F>
    void each_object(F f) {
        for (auto& entry : matrices) f(entry.second.dataset);
        for (Rows& set : row_sets) {
            f(set.y);
            f(set.step);
        }
        f(independent_transfer);
    }

    // Collective: what is written so far reaches the disk, so a job that dies later leaves a
    // readable .partial; every rank learns whether it worked.
    void flush_everywhere() {
        agree(comm, [&] {
            h5_check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "H5Fflush('" + partial_path + "')");
        });
    }

    void close_objects() noexcept {
        each_object([](auto& id) { id.reset(); });
    }

    // Not collective: checks the layout and the attributes (the same on every rank, so they fail
    // everywhere or nowhere, before any collective), then the fields every open file starts
    // from, and our own duplicate of `comm`.
    static std::unique_ptr<State> make(MPI_Comm comm, const std::string& path, bool overwrite,
                                       const ResultFileLayout& layout,
                                       const Attributes& attributes) {
        validate_layout(layout);
        validate_attributes(attributes);
        auto state = std::make_unique<State>();
        state->path = path;
        state->partial_path = path + ".partial";
        state->overwrite = overwrite;
        state->pairs = layout.pairs;
        state->rows = layout.written_steps.size();
        state->y_type = layout.y_type;
        MPI_CHECK(MPI_Comm_dup(comm, &state->comm));
        MPI_CHECK(MPI_Comm_rank(state->comm, &state->rank));
        return state;
    }

    // Collective: opens the existing .partial (checked on rank 0 already) and every dataset of
    // `layout`, and writes `attributes`; `complete` stays 0 and /step as it is.
    void open_objects(const ResultFileLayout& layout, const Attributes& attributes) {
        file = H5File(
            h5_check(H5Fopen(partial_path.c_str(), H5F_ACC_RDWR, parallel_file_access(comm).get()),
                     "H5Fopen('" + partial_path + "')"));
        independent_transfer = independent_transfer_list();
        // The declared order: each set's y and step, then the matrices as listed.
        const std::vector<DeclaredDataset> declared = declared_datasets(layout);
        std::size_t next = 0;
        if (!layout.written_steps.empty()) {
            for (const RowSet& set : gpurelay::row_sets(layout)) {
                Rows& rows_of_set = row_sets.emplace_back();
                rows_of_set.y = open_declared_dataset(file.get(), partial_path, declared[next++]);
                rows_of_set.step =
                    open_declared_dataset(file.get(), partial_path, declared[next++]);
                rows_of_set.elements = set.elements;
                rows_of_set.group = set.group;
            }
        }
        for (const MatrixSpec& spec : layout.matrices) {
            matrices.emplace(
                matrix_key(spec.path),
                Matrix{open_declared_dataset(file.get(), partial_path, declared[next++]), spec.type,
                       spec.rows, spec.cols});
        }
        write_root_attributes(attributes);
    }

    void write_root_attributes(const Attributes& attributes) {
        for (const auto& [name, value] : attributes) write_attribute(file.get(), name, value);
    }
};

}  // namespace gpurelay
