// The HDF5 wrapper (h5.hpp).
#include "io/h5.hpp"

#include <hdf5_hl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <variant>
#include <vector>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

struct ErrorStackEntry {
    std::string description;
    hid_t minor;
};

herr_t collect_error_entry(unsigned /*depth*/, const H5E_error2_t* error, void* client_data) {
    auto* entries = static_cast<std::vector<ErrorStackEntry>*>(client_data);
    entries->push_back({error->desc != nullptr ? error->desc : "", error->min_num});
    return 0;
}

// The innermost description on HDF5's error stack, as one line; when that is only MPI's error
// string, the step that reported it comes first ("MPI_File_open failed: MPI_ERR_NO_SUCH_FILE:
// ..."). Clears the stack.
std::string hdf5_error_detail() {
    std::vector<ErrorStackEntry> entries;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error_entry, &entries);
    H5Eclear2(H5E_DEFAULT);
    if (entries.empty()) return "no details on the HDF5 error stack";
    std::string detail = entries[0].description;
    if (entries[0].minor == H5E_MPIERRSTR && entries.size() > 1) {
        detail = entries[1].description + ": " + detail;
    }
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    return detail;
}

// The one table of element types, each with its name, its type in the file and in memory.
struct StoredType {
    ElementType type;
    const char* name;
    hid_t file;    // as stored: little-endian IEEE / two's complement
    hid_t memory;  // as the C++ type holds it
};

// Made on each call: the H5T_* ids are globals that HDF5 sets when it opens, not constants.
std::array<StoredType, 4> stored_types() {
    return {{
        {ElementType::float32, "float32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {ElementType::float64, "float64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE},
        {ElementType::uint64, "uint64", H5T_STD_U64LE, H5T_NATIVE_UINT64},
        {ElementType::int64, "int64", H5T_STD_I64LE, H5T_NATIVE_INT64},
    }};
}

// The entry of `type`; a runtime error for a value outside the enumeration.
StoredType stored_type(ElementType type) {
    for (const StoredType& entry : stored_types()) {
        if (entry.type == type) return entry;
    }
    throw runtime_error("unknown element type");
}

// h5py's boolean type: an enum over int8 with FALSE = 0 and TRUE = 1.
H5Datatype bool_type() {
    H5Datatype type(h5_check(H5Tenum_create(H5T_NATIVE_INT8), "H5Tenum_create(bool)"));
    const std::int8_t no = 0, yes = 1;
    h5_check(H5Tenum_insert(type.get(), "FALSE", &no), "H5Tenum_insert(FALSE)");
    h5_check(H5Tenum_insert(type.get(), "TRUE", &yes), "H5Tenum_insert(TRUE)");
    return type;
}

}  // namespace

void throw_hdf5_error(std::string_view call, std::string_view what) {
    std::string where(call);
    if (!what.empty()) ((where += "(") += what) += ")";
    throw runtime_error("HDF5 error in " + where + ": " + hdf5_error_detail());
}

H5File open_serial_read_only(const std::string& path, const std::string& verb) {
    if (H5Fis_hdf5(path.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw usage_error("cannot " + verb + " '" + path + "': not an HDF5 file");
    }
    return H5File(
        h5_check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen('" + path + "')"));
}

std::string hdf5_version() {
    unsigned major = 0, minor = 0, release = 0;
    QuietHdf5Errors quiet;
    h5_check(H5get_libversion(&major, &minor, &release), "H5get_libversion");
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

hid_t file_type(ElementType type) { return stored_type(type).file; }

hid_t memory_type(ElementType type) { return stored_type(type).memory; }

const char* element_type_name(ElementType type) { return stored_type(type).name; }

std::string stored_type_name(hid_t type) {
    for (const StoredType& candidate : stored_types()) {
        if (H5Tequal(type, candidate.file) > 0) return candidate.name;
    }
    return "an unsupported type";
}

void write_attribute(hid_t object, const std::string& name, const AttributeValue& value) {
    const std::string what = "attribute '" + name + "'";
    if (h5_check(H5Aexists(object, name.c_str()), "H5Aexists", what) > 0) {
        h5_check(H5Adelete(object, name.c_str()), "H5Adelete", what);
    }
    const auto write = [&](hid_t stored, hid_t space, hid_t held, const void* data) {
        H5Attribute attribute(
            h5_check(H5Acreate2(object, name.c_str(), stored, space, H5P_DEFAULT, H5P_DEFAULT),
                     "H5Acreate2", what));
        h5_check(H5Awrite(attribute.get(), held, data), "H5Awrite", what);
        h5_check(attribute.close(), "H5Aclose", what);
    };
    H5Dataspace scalar(h5_check(H5Screate(H5S_SCALAR), "H5Screate(scalar)"));
    if (const auto* text = std::get_if<std::string>(&value)) {
        // Variable-length UTF-8: h5py reads it as str, and a long value (a whole config deck)
        // lives on the global heap instead of hitting the 64 KiB object-header limit.
        H5Datatype type(h5_check(H5Tcopy(H5T_C_S1), "H5Tcopy(string)"));
        h5_check(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size(variable)");
        h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset(UTF-8)");
        const char* characters = text->c_str();
        write(type.get(), scalar.get(), type.get(), &characters);
    } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
        write(H5T_STD_I64LE, scalar.get(), H5T_NATIVE_INT64, integer);
    } else if (const auto* flag = std::get_if<bool>(&value)) {
        const H5Datatype type = bool_type();
        const std::int8_t stored = *flag ? 1 : 0;
        write(type.get(), scalar.get(), type.get(), &stored);
    } else if (const auto* integers = std::get_if<std::vector<std::int64_t>>(&value)) {
        const hsize_t length = integers->size();
        H5Dataspace list(h5_check(H5Screate_simple(1, &length, nullptr), "H5Screate_simple"));
        write(H5T_STD_I64LE, list.get(), H5T_NATIVE_INT64, integers->data());
    } else {
        write(H5T_IEEE_F64LE, scalar.get(), H5T_NATIVE_DOUBLE, &std::get<double>(value));
    }
}

std::optional<AttributeValue> read_attribute(hid_t object, const std::string& name,
                                             const std::string& what) {
    if (h5_check(H5Aexists(object, name.c_str()), "H5Aexists", what) <= 0) return std::nullopt;
    H5Attribute attribute(h5_check(H5Aopen(object, name.c_str(), H5P_DEFAULT), "H5Aopen", what));
    H5Dataspace space(h5_check(H5Aget_space(attribute.get()), "H5Aget_space", what));
    if (H5Sget_simple_extent_type(space.get()) != H5S_SCALAR) {
        throw usage_error(what + " is not a scalar");
    }
    H5Datatype type(h5_check(H5Aget_type(attribute.get()), "H5Aget_type", what));
    const auto read = [&](hid_t memory, auto value) -> AttributeValue {
        h5_check(H5Aread(attribute.get(), memory, &value), "H5Aread", what);
        return value;
    };
    switch (H5Tget_class(type.get())) {
        case H5T_STRING: {
            H5Datatype memory(h5_check(H5Tcopy(H5T_C_S1), "H5Tcopy(string)"));
            h5_check(H5Tset_cset(memory.get(), H5Tget_cset(type.get())), "H5Tset_cset", what);
            if (h5_check(H5Tis_variable_str(type.get()), "H5Tis_variable_str", what) > 0) {
                h5_check(H5Tset_size(memory.get(), H5T_VARIABLE), "H5Tset_size(variable)");
                char* text = nullptr;
                h5_check(H5Aread(attribute.get(), memory.get(), &text), "H5Aread", what);
                std::string value = text != nullptr ? text : "";
                H5free_memory(text);
                return value;
            }
            const std::size_t size = H5Tget_size(type.get());
            if (size == 0) throw_hdf5_error("H5Tget_size(" + what + ")");
            // NULLPAD keeps every stored byte (NULLTERM would drop the last to make room).
            h5_check(H5Tset_size(memory.get(), size), "H5Tset_size", what);
            h5_check(H5Tset_strpad(memory.get(), H5T_STR_NULLPAD), "H5Tset_strpad", what);
            std::string value(size, '\0');
            h5_check(H5Aread(attribute.get(), memory.get(), value.data()), "H5Aread", what);
            value.resize(std::min(value.find('\0'), value.size()));
            return value;
        }
        case H5T_INTEGER:
            return read(H5T_NATIVE_INT64, std::int64_t{0});
        case H5T_ENUM: {
            // Only h5py's boolean: {FALSE = 0, TRUE = 1}; the conversion fails on other names.
            H5Datatype memory = bool_type();
            std::int8_t value = 0;
            if (H5Aread(attribute.get(), memory.get(), &value) < 0) {
                H5Eclear2(H5E_DEFAULT);
                throw usage_error(what + " is an enum other than a boolean {FALSE, TRUE}");
            }
            return value != 0;
        }
        case H5T_FLOAT:
            return read(H5T_NATIVE_DOUBLE, 0.0);
        default:
            throw usage_error(what + " is neither a string, an integer nor a float");
    }
}

void write_notes(hid_t dataset, const DatasetNotes& notes, const std::string& what) {
    if (!notes.units.empty()) write_attribute(dataset, "units", notes.units);
    if (!notes.description.empty()) write_attribute(dataset, "description", notes.description);
    for (std::size_t d = 0; d < notes.dims.size(); ++d) {
        h5_check(H5DSset_label(dataset, static_cast<unsigned>(d), notes.dims[d].c_str()),
                 "H5DSset_label(" + what + ", " + notes.dims[d] + ")");
    }
}

void write_group_attributes(hid_t file, const GroupAttributes& groups) {
    for (const auto& [path, attributes] : groups) {
        H5Group group(h5_check(H5Gopen2(file, path.c_str(), H5P_DEFAULT), "H5Gopen2", path));
        for (const auto& [name, value] : attributes) write_attribute(group.get(), name, value);
    }
}

void write_hyperslab(hid_t dataset, const hsize_t* start, const hsize_t* count, hsize_t values,
                     hid_t type, hid_t transfer, const void* data, const std::string& what) {
    if (values == 0) return;
    if (data == nullptr) throw runtime_error("result file: no data for " + what);
    H5Dataspace file_space(h5_check(H5Dget_space(dataset), "H5Dget_space", what));
    h5_check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
             "H5Sselect_hyperslab", what);
    H5Dataspace memory_space(
        h5_check(H5Screate_simple(1, &values, nullptr), "H5Screate_simple", what));
    h5_check(H5Dwrite(dataset, type, memory_space.get(), file_space.get(), transfer, data),
             "H5Dwrite", what);
}

}  // namespace gpurelay
