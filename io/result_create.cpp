// Creating a result file: rank 0 makes the whole PATH.partial serially (every dataset allocated,
// the matrices filled, the root attributes with complete = 0), then every rank opens it.
#include <hdf5.h>
#include <hdf5_hl.h>

#include <filesystem>
#include <limits>
#include <system_error>

#include "io/h5_call.hpp"
#include "io/h5_data.hpp"
#include "io/h5_types.hpp"
#include "io/output_path.hpp"
#include "io/result_file.hpp"
#include "io/result_file_state.hpp"
#include "io/result_layout.hpp"
#include "mpi/agreement.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

// NaN for floats, 0 for integers (of either sign: the same bytes).
void set_fill_value(hid_t dataset_create, ElementType type, const std::string& path) {
    static const float nan32 = std::numeric_limits<float>::quiet_NaN();
    static const double nan64 = std::numeric_limits<double>::quiet_NaN();
    static const std::int64_t zero = 0;
    const void* value = type == ElementType::float32   ? static_cast<const void*>(&nan32)
                        : type == ElementType::float64 ? static_cast<const void*>(&nan64)
                                                       : &zero;
    h5_check(H5Pset_fill_value(dataset_create, memory_type(type), value), "H5Pset_fill_value",
             path);
}

// Contiguous storage allocated at creation: rows are then plain offsets in the file, and
// independent writes never have to allocate (allocation is collective in parallel HDF5).
H5PropertyList contiguous_early(const std::string& path, H5D_fill_time_t fill_time) {
    H5PropertyList dataset_create(
        h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create, " + path + ")"));
    h5_check(H5Pset_layout(dataset_create.get(), H5D_CONTIGUOUS), "H5Pset_layout", path);
    h5_check(H5Pset_alloc_time(dataset_create.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time",
             path);
    h5_check(H5Pset_fill_time(dataset_create.get(), fill_time), "H5Pset_fill_time", path);
    return dataset_create;
}

H5Dataset create_dataset(hid_t file, const std::string& path, ElementType type, int rank,
                         const hsize_t* dims, hid_t link_create, hid_t dataset_create) {
    H5Dataspace space(h5_check(H5Screate_simple(rank, dims, nullptr), "H5Screate_simple", path));
    return H5Dataset(h5_check(H5Dcreate2(file, path.c_str(), file_type(type), space.get(),
                                         link_create, dataset_create, H5P_DEFAULT),
                              "H5Dcreate2", path));
}

// One set's /y and its /step, under `group` (made first when it is not the root).
void create_rows(hid_t file, const ResultFileLayout& layout, const RowSet& set, hid_t link_create) {
    const std::string y_name = set.group + "/y", step_name = set.group + "/step";
    const hsize_t rows = layout.written_steps.size();
    // Every element of /y gets written (or the run is incomplete): filling it first would
    // write the whole tensor twice.
    H5PropertyList y_create = contiguous_early(y_name, H5D_FILL_TIME_NEVER);
    const hsize_t y_dims[3] = {layout.pairs, rows, set.elements};
    H5Dataset y =
        create_dataset(file, y_name, layout.y_type, 3, y_dims, link_create, y_create.get());
    write_notes(y.get(), layout.y_notes, y_name);
    H5PropertyList step_create = contiguous_early(step_name, H5D_FILL_TIME_NEVER);
    H5Dataset step = create_dataset(file, step_name, ElementType::int64, 1, &rows, link_create,
                                    step_create.get());
    const hsize_t start = 0;
    write_hyperslab(step.get(), &start, &rows, rows, H5T_NATIVE_INT64, H5P_DEFAULT,
                    layout.written_steps.data(), step_name);
    write_notes(step.get(), layout.step_notes, step_name);
    // /step is the coordinate of /y's rows: a dimension scale attached to its dimension 1.
    h5_check(H5DSset_scale(step.get(), "step"), "H5DSset_scale", step_name);
    h5_check(H5DSattach_scale(y.get(), step.get(), 1),
             "H5DSattach_scale(" + y_name + ", " + step_name + ")");
}

// Rank 0 only: every dataset of `layout` (allocated, matrices filled), /step and the root
// attributes with complete = 0, in `file` opened serially.
void create_structure(hid_t file, const ResultFileLayout& layout, const Attributes& attributes) {
    H5PropertyList link_create(h5_check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate(link create)"));
    h5_check(H5Pset_create_intermediate_group(link_create.get(), 1),
             "H5Pset_create_intermediate_group");
    if (!layout.written_steps.empty()) {
        for (const RowSet& set : row_sets(layout))
            create_rows(file, layout, set, link_create.get());
    }
    for (const MatrixSpec& spec : layout.matrices) {
        const std::string name = matrix_name(spec);
        H5PropertyList matrix_create = contiguous_early(name, H5D_FILL_TIME_ALLOC);
        set_fill_value(matrix_create.get(), spec.type, name);
        const hsize_t dims[2] = {spec.rows, spec.cols};
        H5Dataset dataset =
            create_dataset(file, name, spec.type, 2, dims, link_create.get(), matrix_create.get());
        DatasetNotes notes{spec.units, spec.description, {}};
        if (!spec.row_label.empty() || !spec.col_label.empty()) {
            notes.dims = {spec.row_label, spec.col_label};
        }
        write_notes(dataset.get(), notes, name);
    }
    write_group_attributes(file, layout.group_attributes);
    for (const auto& [name, value] : attributes) write_attribute(file, name, value);
    write_attribute(file, std::string(complete_attribute), std::int64_t{0});
}

// Rank 0 only: makes the whole .partial serially under a temporary name and then gives it its
// name, so no collective call can fail on one rank while the others wait in it (a full disk, a
// quota, a killed rank), and a .partial is complete and readable from the moment it exists.
void make_partial(const std::string& partial_path, const ResultFileLayout& layout,
                  const Attributes& attributes) {
    const std::string temporary = partial_path + ".tmp";
    // Left by a creation that was killed; the caller holds the output's lock.
    check_output_target("output", temporary, {}, "");
    std::error_code error;
    fs::remove(temporary, error);
    try {
        H5File file(h5_check(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                             "H5Fcreate('" + temporary + "')"));
        create_structure(file.get(), layout, attributes);
        h5_check(file.close(), "H5Fclose('" + temporary + "')");
    } catch (...) {
        fs::remove(temporary, error);
        throw;
    }
    fs::rename(temporary, partial_path, error);
    if (error) {
        fs::remove(temporary, error);
        throw runtime_error("cannot rename '" + temporary + "' to '" + partial_path +
                            "': " + error.message());
    }
}

}  // namespace

ResultFile ResultFile::create(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    std::unique_ptr<State> state = State::make(comm, path, overwrite, layout, attributes);
    // One rank looks at the file system and makes the file, so every rank reports the same thing
    // and no rank waits in a collective call that failed on another.
    agree(state->comm, [&] {
        if (state->rank != 0) return;
        check_target(state->path, overwrite);
        std::error_code error;
        fs::remove(state->partial_path, error);
        if (error) {
            throw runtime_error("cannot remove stale '" + state->partial_path +
                                "': " + error.message());
        }
        make_partial(state->partial_path, layout, attributes);
    });
    agree(state->comm, [&] { state->open_objects(layout, {}); });
    return ResultFile(std::move(state));
}

}  // namespace gpurelay
