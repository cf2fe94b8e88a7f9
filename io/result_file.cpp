#include "io/result_file.hpp"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include "comm/agreement.hpp"
#include "comm/mpi_error.hpp"
#include "io/h5_handle.hpp"
#include "io/output_path.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view complete_attribute = "complete";

// Turns HDF5's automatic error printing off while a ResultFile call runs: a failure becomes one
// exception with one line of text, not a stack dump on stderr from every rank. Restores the
// previous handler, so code elsewhere that relies on HDF5's printing keeps it.
class QuietHdf5Errors {
  public:
    QuietHdf5Errors() noexcept {
        if (H5Eget_auto2(H5E_DEFAULT, &function_, &client_data_) < 0) {
            function_ = nullptr;
            client_data_ = nullptr;
        }
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, function_, client_data_); }
    QuietHdf5Errors(const QuietHdf5Errors&) = delete;
    QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

  private:
    H5E_auto2_t function_ = nullptr;
    void* client_data_ = nullptr;
};

struct ErrorStackEntry {
    std::string description;
    hid_t minor;
};

herr_t collect_error_entry(unsigned /*depth*/, const H5E_error2_t* error, void* client_data) {
    auto* entries = static_cast<std::vector<ErrorStackEntry>*>(client_data);
    entries->push_back({error->desc != nullptr ? error->desc : "", error->min_num});
    return 0;
}

// The innermost description on HDF5's error stack (where the failure was first seen), as one
// line; when that is only MPI's error string, the step that reported it comes first
// ("MPI_File_open failed: MPI_ERR_NO_SUCH_FILE: ..."). Clears the stack.
std::string hdf5_error_detail() {
    std::vector<ErrorStackEntry> entries;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error_entry, &entries);
    H5Eclear2(H5E_DEFAULT);
    if (entries.empty()) {
        return "no details on the HDF5 error stack";
    }
    std::string detail = entries[0].description;
    if (entries[0].minor == H5E_MPIERRSTR && entries.size() > 1) {
        detail = entries[1].description + ": " + detail;
    }
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    return detail;
}

// Returns `result` (an id, herr_t or htri_t) or, when it is negative, throws a runtime error
// "HDF5 error in <call>: <innermost message>". `call` names the call and what it acted on.
template <typename Result>
Result h5_check(Result result, const std::string& call) {
    if (result < 0) {
        throw runtime_error("HDF5 error in " + call + ": " + hdf5_error_detail());
    }
    return result;
}

hid_t file_type(ElementType type) {
    switch (type) {
        case ElementType::float32:
            return H5T_IEEE_F32LE;
        case ElementType::float64:
            return H5T_IEEE_F64LE;
        case ElementType::uint64:
            return H5T_STD_U64LE;
        case ElementType::int64:
            return H5T_STD_I64LE;
    }
    throw runtime_error("unknown element type");
}

hid_t memory_type(ElementType type) {
    switch (type) {
        case ElementType::float32:
            return H5T_NATIVE_FLOAT;
        case ElementType::float64:
            return H5T_NATIVE_DOUBLE;
        case ElementType::uint64:
            return H5T_NATIVE_UINT64;
        case ElementType::int64:
            return H5T_NATIVE_INT64;
    }
    throw runtime_error("unknown element type");
}

// "a/b" and "/a/b" name the same matrix.
std::string matrix_key(std::string_view path) {
    const auto first = path.find_first_not_of('/');
    return first == std::string_view::npos ? std::string() : std::string(path.substr(first));
}

// Checks that need no communication, so a bad layout fails on every rank at the same point.
void validate_layout(const ResultFileLayout& layout) {
    std::vector<std::string> keys;
    for (const MatrixSpec& spec : layout.matrices) {
        std::string key = matrix_key(spec.path);
        if (key.empty()) {
            throw runtime_error("result file: matrix path '" + spec.path + "' is empty");
        }
        if (!layout.written_steps.empty() && (key == "y" || key == "step")) {
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

// The names an output is written under, beside its final one: each must fit the file system.
// Rank 0 only: the final name may be taken only with `overwrite`; the folder must take new names,
// and the names the output is written under beside its final one must fit the file system.
void check_final_path(const std::string& path, bool overwrite) {
    check_output_target("output", path, {".partial", ".partial.tmp", ".lock"},
                        overwrite ? "" : "--overwrite");
}

// Rank 0 only, after every rank closed the file: gives the finished file its final name.
void publish(const std::string& partial_path, const std::string& path, bool overwrite) {
    std::error_code error;
    // The check at create time does not cover a file that appeared during the run.
    const fs::file_status status = fs::symlink_status(path, error);
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        throw usage_error("output '" + path +
                          "' became something other than a regular file "
                          "during the run; the results stay in '" +
                          partial_path + "'");
    }
    if (!overwrite && fs::exists(status)) {
        throw usage_error("output file '" + path +
                          "' appeared during the run (use --overwrite to replace it); the "
                          "results stay in '" +
                          partial_path + "'");
    }
    fs::rename(partial_path, path, error);
    if (error) {
        throw runtime_error("cannot rename '" + partial_path + "' to '" + path +
                            "': " + error.message());
    }
}

void set_fill_value(hid_t dataset_create, ElementType type, const std::string& path) {
    const float nan32 = std::numeric_limits<float>::quiet_NaN();
    const double nan64 = std::numeric_limits<double>::quiet_NaN();
    const std::uint64_t zero_unsigned = 0;
    const std::int64_t zero_signed = 0;
    const void* value = nullptr;
    switch (type) {
        case ElementType::float32:
            value = &nan32;
            break;
        case ElementType::float64:
            value = &nan64;
            break;
        case ElementType::uint64:
            value = &zero_unsigned;
            break;
        case ElementType::int64:
            value = &zero_signed;
            break;
    }
    h5_check(H5Pset_fill_value(dataset_create, memory_type(type), value),
             "H5Pset_fill_value(" + path + ")");
    h5_check(H5Pset_fill_time(dataset_create, H5D_FILL_TIME_ALLOC),
             "H5Pset_fill_time(" + path + ")");
}

// Contiguous storage allocated at creation: rows are then plain offsets in the file, and
// independent writes never have to allocate (allocation is collective in parallel HDF5).
H5PropertyList contiguous_early(const std::string& path) {
    H5PropertyList dataset_create(
        h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create, " + path + ")"));
    h5_check(H5Pset_layout(dataset_create.get(), H5D_CONTIGUOUS), "H5Pset_layout(" + path + ")");
    h5_check(H5Pset_alloc_time(dataset_create.get(), H5D_ALLOC_TIME_EARLY),
             "H5Pset_alloc_time(" + path + ")");
    return dataset_create;
}

H5Dataset create_dataset(hid_t file, const std::string& path, ElementType type, int rank,
                         const hsize_t* dims, hid_t link_create, hid_t dataset_create) {
    H5Dataspace space(
        h5_check(H5Screate_simple(rank, dims, nullptr), "H5Screate_simple(" + path + ")"));
    return H5Dataset(h5_check(H5Dcreate2(file, path.c_str(), file_type(type), space.get(),
                                         link_create, dataset_create, H5P_DEFAULT),
                              "H5Dcreate2(" + path + ")"));
}

// Collective (every rank writes the same attribute metadata). Replaces an attribute of that name.
void write_attribute(hid_t object, const std::string& name, const AttributeValue& value) {
    const std::string what = "attribute '" + name + "'";
    if (h5_check(H5Aexists(object, name.c_str()), "H5Aexists(" + what + ")") > 0) {
        h5_check(H5Adelete(object, name.c_str()), "H5Adelete(" + what + ")");
    }
    H5Dataspace scalar(h5_check(H5Screate(H5S_SCALAR), "H5Screate(scalar)"));
    if (const auto* text = std::get_if<std::string>(&value)) {
        // Variable-length UTF-8: h5py reads it as str, and a long value (a whole config deck)
        // lives on the global heap instead of hitting the 64 KiB object-header limit.
        H5Datatype type(h5_check(H5Tcopy(H5T_C_S1), "H5Tcopy(string)"));
        h5_check(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size(variable)");
        h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset(UTF-8)");
        H5Attribute attribute(h5_check(
            H5Acreate2(object, name.c_str(), type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
            "H5Acreate2(" + what + ")"));
        const char* characters = text->c_str();
        h5_check(H5Awrite(attribute.get(), type.get(), &characters), "H5Awrite(" + what + ")");
        h5_check(attribute.close(), "H5Aclose(" + what + ")");
    } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
        H5Attribute attribute(h5_check(
            H5Acreate2(object, name.c_str(), H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
            "H5Acreate2(" + what + ")"));
        h5_check(H5Awrite(attribute.get(), H5T_NATIVE_INT64, integer), "H5Awrite(" + what + ")");
        h5_check(attribute.close(), "H5Aclose(" + what + ")");
    } else {
        const double real = std::get<double>(value);
        H5Attribute attribute(h5_check(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE,
                                                  scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                                       "H5Acreate2(" + what + ")"));
        h5_check(H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, &real), "H5Awrite(" + what + ")");
        h5_check(attribute.close(), "H5Aclose(" + what + ")");
    }
}

// Writes the hyperslab start[..] + count[..] of `dataset` from `values` contiguous values in
// memory: no staging copy, the buffer goes straight to MPI-IO.
void write_hyperslab(hid_t dataset, const hsize_t* start, const hsize_t* count, hsize_t values,
                     hid_t type, hid_t transfer, const void* data, const std::string& what) {
    if (values == 0) {
        return;
    }
    if (data == nullptr) {
        throw runtime_error("result file: no data for " + what);
    }
    H5Dataspace file_space(h5_check(H5Dget_space(dataset), "H5Dget_space(" + what + ")"));
    h5_check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
             "H5Sselect_hyperslab(" + what + ")");
    H5Dataspace memory_space(
        h5_check(H5Screate_simple(1, &values, nullptr), "H5Screate_simple(" + what + ")"));
    h5_check(H5Dwrite(dataset, type, memory_space.get(), file_space.get(), transfer, data),
             "H5Dwrite(" + what + ")");
}

const char* element_type_name(ElementType type) {
    switch (type) {
        case ElementType::float32:
            return "float32";
        case ElementType::float64:
            return "float64";
        case ElementType::uint64:
            return "uint64";
        case ElementType::int64:
            return "int64";
    }
    return "unknown";
}

// The ElementType name of a stored type, or "an unsupported type".
std::string stored_type_name(hid_t type) {
    for (ElementType candidate :
         {ElementType::float32, ElementType::float64, ElementType::uint64, ElementType::int64}) {
        if (H5Tequal(type, file_type(candidate)) > 0) {
            return element_type_name(candidate);
        }
    }
    return "an unsupported type";
}

// "[2, 3, 1000]".
std::string shape_text(const std::vector<hsize_t>& dims) {
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
    }
    return text + "]";
}

// One dataset that a layout declares: where it lies, what it holds and its exact shape.
struct DeclaredDataset {
    std::string name;  // absolute ("/timings/step_s")
    ElementType type;
    std::vector<hsize_t> dims;
};

// /y and /step (when the layout has written steps), then the matrices in declaration order.
std::vector<DeclaredDataset> declared_datasets(const ResultFileLayout& layout) {
    std::vector<DeclaredDataset> datasets;
    if (!layout.written_steps.empty()) {
        const hsize_t rows = layout.written_steps.size();
        datasets.push_back({"/y", layout.y_type, {layout.pairs, rows, layout.elements}});
        datasets.push_back({"/step", ElementType::int64, {rows}});
    }
    for (const MatrixSpec& spec : layout.matrices) {
        // Appended rather than "/" + key: GCC 12 warns falsely (-Wrestrict) on the latter.
        std::string name = "/";
        name += matrix_key(spec.path);
        datasets.push_back({std::move(name), spec.type, {spec.rows, spec.cols}});
    }
    return datasets;
}

// Whether `name` ("/a/b/c") exists: H5Lexists fails, rather than answering no, when a group on
// the way is missing, so each step is asked in turn.
bool link_exists(hid_t file, const std::string& name) {
    std::size_t end = 0;
    do {
        end = name.find('/', end + 1);
        const std::string prefix = name.substr(0, end);
        if (h5_check(H5Lexists(file, prefix.c_str(), H5P_DEFAULT), "H5Lexists(" + prefix + ")") <=
            0) {
            return false;
        }
    } while (end != std::string::npos);
    return true;
}

// Opens the declared dataset in `file` (named `file_path` in messages); a usage error naming the
// dataset when it is missing or its type or shape differs from the declaration.
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
    H5Datatype type(h5_check(H5Dget_type(dataset.get()), "H5Dget_type(" + declared.name + ")"));
    if (h5_check(H5Tequal(type.get(), file_type(declared.type)),
                 "H5Tequal(" + declared.name + ")") <= 0) {
        throw usage_error(prefix + " has type " + stored_type_name(type.get()) +
                          " but this run needs " + element_type_name(declared.type));
    }
    H5Dataspace space(h5_check(H5Dget_space(dataset.get()), "H5Dget_space(" + declared.name + ")"));
    const int rank = h5_check(H5Sget_simple_extent_ndims(space.get()),
                              "H5Sget_simple_extent_ndims(" + declared.name + ")");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    h5_check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             "H5Sget_simple_extent_dims(" + declared.name + ")");
    if (dims != declared.dims) {
        throw usage_error(prefix + " has shape " + shape_text(dims) + " but this run needs " +
                          shape_text(declared.dims));
    }
    return dataset;
}

// Reads a scalar attribute as the AttributeValue alternative of its class: any string (variable
// or fixed length), any integer (as int64), any float (as double). `what` names it in messages.
AttributeValue read_attribute(hid_t object, const std::string& name, const std::string& what) {
    H5Attribute attribute(
        h5_check(H5Aopen(object, name.c_str(), H5P_DEFAULT), "H5Aopen(" + what + ")"));
    H5Dataspace space(h5_check(H5Aget_space(attribute.get()), "H5Aget_space(" + what + ")"));
    if (H5Sget_simple_extent_type(space.get()) != H5S_SCALAR) {
        throw usage_error(what + " is not a scalar");
    }
    H5Datatype type(h5_check(H5Aget_type(attribute.get()), "H5Aget_type(" + what + ")"));
    switch (H5Tget_class(type.get())) {
        case H5T_STRING: {
            H5Datatype memory(h5_check(H5Tcopy(H5T_C_S1), "H5Tcopy(string)"));
            h5_check(H5Tset_cset(memory.get(), H5Tget_cset(type.get())),
                     "H5Tset_cset(" + what + ")");
            if (h5_check(H5Tis_variable_str(type.get()), "H5Tis_variable_str(" + what + ")") > 0) {
                h5_check(H5Tset_size(memory.get(), H5T_VARIABLE), "H5Tset_size(variable)");
                char* text = nullptr;
                h5_check(H5Aread(attribute.get(), memory.get(), &text), "H5Aread(" + what + ")");
                std::string value = text != nullptr ? text : "";
                H5free_memory(text);
                return value;
            }
            const std::size_t size = H5Tget_size(type.get());
            if (size == 0) {
                throw runtime_error("HDF5 error in H5Tget_size(" + what +
                                    "): " + hdf5_error_detail());
            }
            // NULLPAD keeps every stored byte (NULLTERM would drop the last to make room).
            h5_check(H5Tset_size(memory.get(), size), "H5Tset_size(" + what + ")");
            h5_check(H5Tset_strpad(memory.get(), H5T_STR_NULLPAD), "H5Tset_strpad(" + what + ")");
            std::string value(size, '\0');
            h5_check(H5Aread(attribute.get(), memory.get(), value.data()), "H5Aread(" + what + ")");
            value.resize(std::min(value.find('\0'), value.size()));
            return value;
        }
        case H5T_INTEGER: {
            std::int64_t value = 0;
            h5_check(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), "H5Aread(" + what + ")");
            return value;
        }
        case H5T_FLOAT: {
            double value = 0;
            h5_check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), "H5Aread(" + what + ")");
            return value;
        }
        default:
            throw usage_error(what + " is neither a string, an integer nor a float");
    }
}

// Opens `path` read-only with the default (serial) driver; a usage error "cannot <verb> 'path':
// not an HDF5 file" when it is not one.
H5File open_serial_read_only(const std::string& path, const std::string& verb) {
    if (H5Fis_hdf5(path.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw usage_error("cannot " + verb + " '" + path + "': not an HDF5 file");
    }
    return H5File(
        h5_check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen('" + path + "')"));
}

// Rank 0 only, serially, before any rank opens the file for writing: the existing PATH.partial
// must be an unfinished result file with every dataset of `layout`, /step holding its steps.
void check_resumable(const std::string& partial_path, const ResultFileLayout& layout) {
    H5File file = open_serial_read_only(partial_path, "resume");
    const std::string prefix = "cannot resume '" + partial_path + "': ";
    const std::string complete_name(complete_attribute);
    if (h5_check(H5Aexists(file.get(), complete_name.c_str()), "H5Aexists(complete)") <= 0) {
        throw usage_error(prefix + "it has no 'complete' attribute");
    }
    const AttributeValue complete =
        read_attribute(file.get(), complete_name, "attribute 'complete' of '" + partial_path + "'");
    const auto* complete_value = std::get_if<std::int64_t>(&complete);
    if (complete_value == nullptr) {
        throw usage_error(prefix + "attribute 'complete' is not an integer");
    }
    if (*complete_value != 0) {
        throw usage_error("nothing to resume: '" + partial_path + "' is complete");
    }
    for (const DeclaredDataset& declared : declared_datasets(layout)) {
        H5Dataset dataset = open_declared_dataset(file.get(), partial_path, declared);
        // Rows are placed by their index into written_steps, so the steps must be the same.
        if (declared.name == "/step") {
            std::vector<std::int64_t> steps(layout.written_steps.size());
            h5_check(H5Dread(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             steps.data()),
                     "H5Dread(/step)");
            if (steps != layout.written_steps) {
                throw usage_error(prefix + "/step holds other steps than this run writes");
            }
        }
    }
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
            if (H5Aexists(file.get(), name) <= 0) return std::nullopt;
            const AttributeValue value = read_attribute(file.get(), name, name);
            const auto* number = std::get_if<std::int64_t>(&value);
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

// Rank 0 only, before a fresh run makes PATH.partial: what stands there must be a regular file,
// and one that --resume could finish is kept unless `overwrite`.
void check_partial_for_fresh_run(const std::string& partial_path, bool overwrite) {
    check_output_target("output", partial_path, {}, "");
    if (overwrite) return;
    if (const std::string kept = finishable_contents(partial_path); !kept.empty()) {
        throw usage_error("'" + partial_path + "' " + kept +
                          ": use --resume, or --overwrite to discard it");
    }
}

// Rank 0 only: every dataset of `layout` (allocated, matrices filled), /step and the root
// attributes with complete = 0, in `file` opened serially.
void create_structure(hid_t file, const ResultFileLayout& layout, const Attributes& attributes) {
    if (!layout.written_steps.empty()) {
        const hsize_t rows = layout.written_steps.size();
        // Every element of /y gets written (or the run is incomplete): filling it first would
        // write the whole tensor twice.
        H5PropertyList y_create = contiguous_early("/y");
        h5_check(H5Pset_fill_time(y_create.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time(/y)");
        const hsize_t y_dims[3] = {layout.pairs, rows, layout.elements};
        create_dataset(file, "/y", layout.y_type, 3, y_dims, H5P_DEFAULT, y_create.get());
        H5PropertyList step_create = contiguous_early("/step");
        h5_check(H5Pset_fill_time(step_create.get(), H5D_FILL_TIME_NEVER),
                 "H5Pset_fill_time(/step)");
        H5Dataset step = create_dataset(file, "/step", ElementType::int64, 1, &rows, H5P_DEFAULT,
                                        step_create.get());
        const hsize_t start = 0;
        write_hyperslab(step.get(), &start, &rows, rows, H5T_NATIVE_INT64, H5P_DEFAULT,
                        layout.written_steps.data(), "/step");
    }
    H5PropertyList link_create(h5_check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate(link create)"));
    h5_check(H5Pset_create_intermediate_group(link_create.get(), 1),
             "H5Pset_create_intermediate_group");
    for (const MatrixSpec& spec : layout.matrices) {
        // Appended rather than "/" + key: GCC 12 warns falsely (-Wrestrict) on the latter.
        std::string name = "/";
        name += matrix_key(spec.path);
        H5PropertyList matrix_create = contiguous_early(name);
        set_fill_value(matrix_create.get(), spec.type, name);
        const hsize_t dims[2] = {spec.rows, spec.cols};
        H5Dataset dataset = create_dataset(file, name, spec.type, 2, dims, link_create.get(),
                                           matrix_create.get());
        if (!spec.units.empty()) write_attribute(dataset.get(), "units", spec.units);
    }
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

// File access for every rank of `comm` through MPI-IO.
H5PropertyList parallel_file_access(MPI_Comm comm) {
    H5PropertyList file_access(h5_check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)"));
    h5_check(H5Pset_fapl_mpio(file_access.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    // Metadata reads by one rank broadcast to the others, and rank 0 alone writes it out
    // collectively: fewer small requests on a parallel file system.
    h5_check(H5Pset_all_coll_metadata_ops(file_access.get(), true), "H5Pset_all_coll_metadata_ops");
    h5_check(H5Pset_coll_metadata_write(file_access.get(), true), "H5Pset_coll_metadata_write");
    return file_access;
}

// Rows are written by one rank at its own pace, so raw data goes independently.
H5PropertyList independent_transfer_list() {
    H5PropertyList transfer(h5_check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(dataset transfer)"));
    h5_check(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_INDEPENDENT),
             "H5Pset_dxpl_mpio(independent)");
    return transfer;
}

}  // namespace

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
    std::uint64_t elements = 0;
    ElementType y_type = ElementType::float32;

    // Declared first, so destroyed last: the file closes only after its datasets.
    H5File file;
    H5PropertyList independent_transfer;
    H5Dataset y;
    H5Dataset step;
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
            for (auto& entry : matrices) {
                entry.second.dataset.release();
            }
            y.release();
            step.release();
            independent_transfer.release();
            file.release();
            return;
        }
        QuietHdf5Errors quiet;
        close_objects();
        file.reset();
        if (comm != MPI_COMM_NULL) {
            MPI_Comm_free(&comm);
        }
    }

    // Collective: what is written so far reaches the disk, so a job that dies later leaves a
    // readable .partial; every rank learns whether it worked.
    void flush_everywhere() {
        agree(comm, [&] {
            h5_check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "H5Fflush('" + partial_path + "')");
        });
    }

    void close_objects() noexcept {
        for (auto& entry : matrices) {
            entry.second.dataset.reset();
        }
        y.reset();
        step.reset();
        independent_transfer.reset();
    }

    // Not collective: the fields every open file starts from, and our own duplicate of `comm`.
    static std::unique_ptr<State> make(MPI_Comm comm, const std::string& path, bool overwrite,
                                       const ResultFileLayout& layout) {
        auto state = std::make_unique<State>();
        state->path = path;
        state->partial_path = path + ".partial";
        state->overwrite = overwrite;
        state->pairs = layout.pairs;
        state->rows = layout.written_steps.size();
        state->elements = layout.elements;
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
        // The declared order: /y, /step, then the matrices as listed.
        const std::vector<DeclaredDataset> declared = declared_datasets(layout);
        std::size_t next = 0;
        if (!layout.written_steps.empty()) {
            y = open_declared_dataset(file.get(), partial_path, declared[next++]);
            step = open_declared_dataset(file.get(), partial_path, declared[next++]);
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
        for (const auto& [name, value] : attributes) {
            write_attribute(file.get(), name, value);
        }
    }

    void require_open(const char* call) const {
        if (closed) {
            throw runtime_error(std::string("result file: ") + call + " after close of '" +
                                partial_path + "'");
        }
    }
};

ResultFile::ResultFile(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
ResultFile::ResultFile(ResultFile&&) noexcept = default;
ResultFile& ResultFile::operator=(ResultFile&&) noexcept = default;
ResultFile::~ResultFile() = default;

ResultFile ResultFile::create(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    // Same layout on every rank, so these fail everywhere or nowhere, before any collective.
    validate_layout(layout);
    validate_attributes(attributes);

    std::unique_ptr<State> state = State::make(comm, path, overwrite, layout);
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

void ResultFile::publish_complete_partial(const std::string& path, bool overwrite) {
    check_final_path(path, overwrite);
    publish(path + ".partial", path, overwrite);
}

void ResultFile::check_target(const std::string& path, bool overwrite) {
    QuietHdf5Errors quiet;
    check_final_path(path, overwrite);
    check_partial_for_fresh_run(path + ".partial", overwrite);
}

ResultFile ResultFile::reopen(MPI_Comm comm, const std::string& path, bool overwrite,
                              const ResultFileLayout& layout, const Attributes& attributes) {
    QuietHdf5Errors quiet;
    validate_layout(layout);
    validate_attributes(attributes);
    std::unique_ptr<State> state = State::make(comm, path, overwrite, layout);

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
    const std::string what = "attribute '" + name + "' of '" + file_path + "'";
    if (h5_check(H5Aexists(file.get(), name.c_str()), "H5Aexists(" + what + ")") <= 0) {
        return std::nullopt;
    }
    return read_attribute(file.get(), name, what);
}

void ResultFile::write_y_row(std::uint64_t pair, std::uint64_t row, const void* data) {
    if (!state_) {
        throw runtime_error("result file: write_y_row on a moved-from file");
    }
    State& state = *state_;
    state.require_open("write_y_row");
    if (!state.y) {
        throw runtime_error("result file: write_y_row, but the file has no /y (no written steps)");
    }
    if (pair >= state.pairs || row >= state.rows) {
        throw runtime_error("result file: /y row (pair " + std::to_string(pair) + ", row " +
                            std::to_string(row) + ") is outside [" + std::to_string(state.pairs) +
                            ", " + std::to_string(state.rows) + "]");
    }
    QuietHdf5Errors quiet;
    const hsize_t start[3] = {pair, row, 0};
    const hsize_t count[3] = {1, 1, state.elements};
    write_hyperslab(state.y.get(), start, count, state.elements, memory_type(state.y_type),
                    state.independent_transfer.get(), data,
                    "/y pair " + std::to_string(pair) + " row " + std::to_string(row));
}

void ResultFile::write_matrix_row(const std::string& path, std::uint64_t row, const void* data) {
    if (!state_) {
        throw runtime_error("result file: write_matrix_row on a moved-from file");
    }
    State& state = *state_;
    state.require_open("write_matrix_row");
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
    if (!state_) {
        throw runtime_error("result file: flush on a moved-from file");
    }
    State& state = *state_;
    state.require_open("flush");
    QuietHdf5Errors quiet;
    state.flush_everywhere();
}

void ResultFile::close(bool complete, const Attributes& attributes) {
    if (!state_) {
        throw runtime_error("result file: close on a moved-from file");
    }
    State& state = *state_;
    state.require_open("close");
    validate_attributes(attributes);
    QuietHdf5Errors quiet;

    // The file is closed whatever happened before; H5Fclose writes the last metadata. The
    // agreement is also the barrier that lets rank 0 rename only after every rank closed it.
    agree(state.comm, [&] {
        std::exception_ptr first_failure;
        try {
            state.write_root_attributes(attributes);
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
            publish(state.partial_path, state.path, state.overwrite);
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

std::string hdf5_version() {
    unsigned major = 0;
    unsigned minor = 0;
    unsigned release = 0;
    QuietHdf5Errors quiet;
    h5_check(H5get_libversion(&major, &minor, &release), "H5get_libversion");
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace gpurelay
