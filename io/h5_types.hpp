// How each ElementType is stored (little-endian IEEE / two's complement) and held in memory,
// and its name: one table (h5_types.cpp) that every dataset and message reads.
#pragma once

#include <hdf5.h>

#include <string>

#include "io/result_file.hpp"

namespace gpurelay {

// The type `type` is stored as in the file, and the one it is read and written as in memory.
hid_t file_type(ElementType type);
hid_t memory_type(ElementType type);
// "float32", "float64", "uint64" or "int64".
const char* element_type_name(ElementType type);
// The ElementType name of a stored type, or "an unsupported type".
std::string stored_type_name(hid_t type);

}  // namespace gpurelay
