// The one table of element types: each ElementType with its name, its type in the file and its
// type in memory.
#include "io/h5_types.hpp"

#include <array>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

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

}  // namespace

hid_t file_type(ElementType type) { return stored_type(type).file; }

hid_t memory_type(ElementType type) { return stored_type(type).memory; }

const char* element_type_name(ElementType type) {
    for (const StoredType& entry : stored_types()) {
        if (entry.type == type) return entry.name;
    }
    return "unknown";
}

std::string stored_type_name(hid_t type) {
    for (const StoredType& candidate : stored_types()) {
        if (H5Tequal(type, candidate.file) > 0) return candidate.name;
    }
    return "an unsupported type";
}

}  // namespace gpurelay
