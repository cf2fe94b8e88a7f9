// Values in and out of HDF5 objects: scalar attributes (written and read back) and hyperslabs
// written straight from the caller's memory.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>

#include "io/h5_handle.hpp"
#include "io/result_file.hpp"

namespace gpurelay {

// Collective (every rank writes the same attribute metadata). Replaces an attribute of that name.
void write_attribute(hid_t object, const std::string& name, const AttributeValue& value);

// Reads a scalar attribute as the AttributeValue alternative of its class: any string (variable
// or fixed length), any integer (as int64), any float (as double); none when there is no such
// attribute. `what` names it in messages.
std::optional<AttributeValue> read_attribute(hid_t object, const std::string& name,
                                             const std::string& what);

// Serial or collective alike: writes `notes` on `dataset` (units, description, dimension labels).
void write_notes(hid_t dataset, const DatasetNotes& notes, const std::string& what);

// Writes each group's attributes on it (the groups must exist).
void write_group_attributes(hid_t file, const GroupAttributes& groups);

// Writes the hyperslab start[..] + count[..] of `dataset` from `values` contiguous values in
// memory: no staging copy, the buffer goes straight to MPI-IO.
void write_hyperslab(hid_t dataset, const hsize_t* start, const hsize_t* count, hsize_t values,
                     hid_t type, hid_t transfer, const void* data, const std::string& what);

}  // namespace gpurelay
