// The datasets a layout declares, by name, type and shape, and the checks on a layout.
#include "io/result_layout.hpp"

#include <algorithm>

#include "io/h5_call.hpp"
#include "io/h5_types.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

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

}  // namespace gpurelay
