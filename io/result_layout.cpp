// The serial side of a result file (rank 0 alone): a layout's datasets made or found again, its
// checks, the rule for the output's names, and the rename that publishes a finished file.
#include "io/result_layout.hpp"

#include <hdf5_hl.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>
#include <variant>

#include "io/h5.hpp"
#include "io/output_path.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

// "[2, 3, 1000]".
std::string shape_text(const std::vector<hsize_t>& dims) {
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
    }
    return text + "]";
}

// Whether `name` ("/a/b/c") exists: H5Lexists fails, rather than answering no, when a group on
// the way is missing, so each step is asked in turn.
bool link_exists(hid_t file, const std::string& name) {
    std::size_t end = 0;
    do {
        end = name.find('/', end + 1);
        const std::string prefix = name.substr(0, end);
        if (h5_check(H5Lexists(file, prefix.c_str(), H5P_DEFAULT), "H5Lexists", prefix) <= 0) {
            return false;
        }
    } while (end != std::string::npos);
    return true;
}

// Contiguous storage allocated at creation: rows are then plain offsets in the file, and
// independent writes never have to allocate (allocation is collective in parallel HDF5). `fill`:
// NaN for floats, 0 for integers (of either sign: the same bytes).
H5Dataset create_dataset(hid_t file, const std::string& path, ElementType type,
                         const std::vector<hsize_t>& dims, bool fill, hid_t link_create) {
    static const float nan32 = std::numeric_limits<float>::quiet_NaN();
    static const double nan64 = std::numeric_limits<double>::quiet_NaN();
    static const std::int64_t zero = 0;
    H5PropertyList create(
        h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create, " + path + ")"));
    h5_check(H5Pset_layout(create.get(), H5D_CONTIGUOUS), "H5Pset_layout", path);
    h5_check(H5Pset_alloc_time(create.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time", path);
    h5_check(H5Pset_fill_time(create.get(), fill ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_NEVER),
             "H5Pset_fill_time", path);
    if (fill) {
        const void* value = type == ElementType::float32   ? static_cast<const void*>(&nan32)
                            : type == ElementType::float64 ? static_cast<const void*>(&nan64)
                                                           : &zero;
        h5_check(H5Pset_fill_value(create.get(), memory_type(type), value), "H5Pset_fill_value",
                 path);
    }
    H5Dataspace space(
        h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                 "H5Screate_simple", path));
    return H5Dataset(h5_check(H5Dcreate2(file, path.c_str(), file_type(type), space.get(),
                                         link_create, create.get(), H5P_DEFAULT),
                              "H5Dcreate2", path));
}

// One set's /y and its /step, under `group` (made first when it is not the root). Neither is
// filled: every element gets written (or the run is incomplete), and filling first would write
// the whole tensor twice.
void create_rows(hid_t file, const ResultFileLayout& layout, const RowSet& set, hid_t link_create) {
    const std::string y_name = set.group + "/y", step_name = set.group + "/step";
    const hsize_t rows = layout.written_steps.size();
    H5Dataset y = create_dataset(file, y_name, layout.y_type, {layout.pairs, rows, set.elements},
                                 false, link_create);
    write_notes(y.get(), layout.y_notes, y_name);
    H5Dataset step =
        create_dataset(file, step_name, ElementType::int64, {rows}, false, link_create);
    const hsize_t start = 0;
    write_hyperslab(step.get(), &start, &rows, rows, H5T_NATIVE_INT64, H5P_DEFAULT,
                    layout.written_steps.data(), step_name);
    write_notes(step.get(), layout.step_notes, step_name);
    // /step is the coordinate of /y's rows: a dimension scale attached to its dimension 1.
    h5_check(H5DSset_scale(step.get(), "step"), "H5DSset_scale", step_name);
    h5_check(H5DSattach_scale(y.get(), step.get(), 1),
             "H5DSattach_scale(" + y_name + ", " + step_name + ")");
}

// Rank 0 only: every dataset of `layout` and the root attributes with complete = 0.
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
        H5Dataset dataset =
            create_dataset(file, name, spec.type, {spec.rows, spec.cols}, true, link_create.get());
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

// What an existing .partial holds that a fresh run must not throw away: "" when nothing (not an
// HDF5 result file, or one that died before it was stopped cleanly).
std::string finishable_contents(const std::string& partial_path) {
    if (H5Fis_hdf5(partial_path.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return "";
    }
    try {
        H5File file = open_serial_read_only(partial_path, "read");
        const auto integer = [&](const char* name) -> std::optional<std::int64_t> {
            const std::optional<AttributeValue> value = read_attribute(file.get(), name, name);
            const auto* number = value ? std::get_if<std::int64_t>(&*value) : nullptr;
            return number ? std::optional(*number) : std::nullopt;
        };
        const auto complete = integer(std::string(complete_attribute).c_str());
        if (complete == 1)
            return "holds a finished run that was not renamed (--resume publishes it)";
        const auto stopped = integer("stopped_at_step");
        if (complete == 0 && stopped && *stopped >= 0) {
            return "holds a run stopped after step " + std::to_string(*stopped) +
                   " that --resume can finish";
        }
    } catch (const Error&) {
        H5Eclear2(H5E_DEFAULT);
    }
    return "";
}

}  // namespace

std::string matrix_key(std::string_view path) {
    const auto first = path.find_first_not_of('/');
    return first == std::string_view::npos ? std::string() : std::string(path.substr(first));
}

std::string matrix_name(const MatrixSpec& spec) {
    // Appended rather than "/" + key: GCC 12 warns falsely (-Wrestrict) on the latter.
    std::string name = "/";
    name += matrix_key(spec.path);
    return name;
}

void validate_layout(const ResultFileLayout& layout) {
    std::vector<std::string> keys;
    for (const MatrixSpec& spec : layout.matrices) {
        std::string key = matrix_key(spec.path);
        if (key.empty()) {
            throw runtime_error("result file: matrix path '" + spec.path + "' is empty");
        }
        if (!layout.written_steps.empty() && layout.row_sets.empty() &&
            (key == "y" || key == "step")) {
            throw runtime_error("result file: matrix path '" + spec.path + "' is reserved");
        }
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
            throw runtime_error("result file: matrix '" + spec.path + "' is declared twice");
        }
        keys.push_back(std::move(key));
    }
}

void validate_attributes(const Attributes& attributes) {
    for (const auto& [name, value] : attributes) {
        if (name.empty()) {
            throw runtime_error("result file: an attribute has an empty name");
        }
        if (name == complete_attribute) {
            throw runtime_error("result file: attribute name 'complete' is reserved");
        }
    }
}

std::vector<RowSet> row_sets(const ResultFileLayout& layout) {
    if (!layout.row_sets.empty()) return layout.row_sets;
    return {{"", layout.elements}};
}

std::vector<DeclaredDataset> declared_datasets(const ResultFileLayout& layout) {
    std::vector<DeclaredDataset> datasets;
    if (!layout.written_steps.empty()) {
        const hsize_t rows = layout.written_steps.size();
        for (const RowSet& set : row_sets(layout)) {
            datasets.push_back(
                {set.group + "/y", layout.y_type, {layout.pairs, rows, set.elements}});
            datasets.push_back({set.group + "/step", ElementType::int64, {rows}});
        }
    }
    for (const MatrixSpec& spec : layout.matrices) {
        datasets.push_back({matrix_name(spec), spec.type, {spec.rows, spec.cols}});
    }
    return datasets;
}

H5Dataset open_declared_dataset(hid_t file, const std::string& file_path,
                                const DeclaredDataset& declared) {
    const std::string prefix = "cannot resume '" + file_path + "': " + declared.name;
    if (!link_exists(file, declared.name)) {
        throw usage_error(prefix + " does not exist");
    }
    H5Dataset dataset(H5Dopen2(file, declared.name.c_str(), H5P_DEFAULT));
    if (!dataset) {
        H5Eclear2(H5E_DEFAULT);
        throw usage_error(prefix + " is not a dataset");
    }
    H5Datatype type(h5_check(H5Dget_type(dataset.get()), "H5Dget_type", declared.name));
    if (h5_check(H5Tequal(type.get(), file_type(declared.type)), "H5Tequal", declared.name) <= 0) {
        throw usage_error(prefix + " has type " + stored_type_name(type.get()) +
                          " but this run needs " + element_type_name(declared.type));
    }
    H5Dataspace space(h5_check(H5Dget_space(dataset.get()), "H5Dget_space", declared.name));
    const int rank = h5_check(H5Sget_simple_extent_ndims(space.get()), "H5Sget_simple_extent_ndims",
                              declared.name);
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    h5_check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             "H5Sget_simple_extent_dims", declared.name);
    if (dims != declared.dims) {
        throw usage_error(prefix + " has shape " + shape_text(dims) + " but this run needs " +
                          shape_text(declared.dims));
    }
    return dataset;
}

void make_partial(const std::string& partial_path, const ResultFileLayout& layout,
                  const Attributes& attributes) {
    std::error_code error;
    fs::remove(partial_path, error);
    if (error) {
        throw runtime_error("cannot remove stale '" + partial_path + "': " + error.message());
    }
    const std::string temporary = partial_path + ".tmp";
    // Left by a creation that was killed; the caller holds the output's lock.
    check_output_target("output", temporary, {}, "");
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

void check_final_path(const std::string& path, bool overwrite) {
    check_output_target("output", path, {".partial", ".partial.tmp", ".lock"},
                        overwrite ? "" : "--overwrite");
}

void publish_partial(const std::string& partial_path, const std::string& path, bool overwrite) {
    std::error_code error;
    // The check at create time does not cover a file that appeared during the run.
    const fs::file_status status = fs::symlink_status(path, error);
    const std::string kept = "; the results stay in '" + partial_path + "'";
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        throw usage_error("output '" + path +
                          "' became something other than a regular file during the run" + kept);
    }
    if (!overwrite && fs::exists(status)) {
        throw usage_error("output file '" + path +
                          "' appeared during the run (use --overwrite to replace it)" + kept);
    }
    fs::rename(partial_path, path, error);
    if (error) {
        throw runtime_error("cannot rename '" + partial_path + "' to '" + path +
                            "': " + error.message());
    }
}

void ResultFile::publish_complete_partial(const std::string& path, bool overwrite) {
    check_final_path(path, overwrite);
    publish_partial(path + ".partial", path, overwrite);
}

std::string ResultFile::fresh_start_advice(const std::string& path) {
    QuietHdf5Errors quiet;
    return finishable_contents(path + ".partial").empty()
               ? "run again without --resume to start afresh (a fresh run replaces it)"
               : "run again with --overwrite instead of --resume to start afresh";
}

void ResultFile::check_target(const std::string& path, bool overwrite) {
    QuietHdf5Errors quiet;
    check_final_path(path, overwrite);
    // What stands at PATH.partial must be a regular file, and one that --resume could finish is
    // kept unless `overwrite`.
    const std::string partial_path = path + ".partial";
    check_output_target("output", partial_path, {}, "");
    if (overwrite) return;
    if (const std::string kept = finishable_contents(partial_path); !kept.empty()) {
        throw usage_error("'" + partial_path + "' " + kept +
                          ": use --resume, or --overwrite to discard it");
    }
}

}  // namespace gpurelay
