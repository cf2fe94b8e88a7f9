// The HDF5 C API made safe (HighFive's idea, small): RAII ids, checked calls that fail as one
// exception with one line of text, attributes, notes and hyperslab writes.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "io/result_file.hpp"

namespace gpurelay {

// Owns one HDF5 id that `Close` closes; a negative id (a failed call) owns nothing.
template <herr_t (*Close)(hid_t)>
class H5Handle {
  public:
    H5Handle() noexcept = default;
    explicit H5Handle(hid_t id) noexcept : id_(id) {}
    ~H5Handle() { reset(); }
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    H5Handle(H5Handle&& other) noexcept : id_(other.release()) {}
    H5Handle& operator=(H5Handle&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = other.release();
        }
        return *this;
    }

    hid_t get() const noexcept { return id_; }
    bool valid() const noexcept { return id_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }
    hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
    // Closes now and returns the status, so that a file's final flush can fail as an exception.
    herr_t close() noexcept { return id_ < 0 ? 0 : Close(release()); }
    // Closes quietly: destructors and unwinding must not throw.
    void reset() noexcept { static_cast<void>(close()); }

  private:
    hid_t id_ = H5I_INVALID_HID;
};

using H5File = H5Handle<H5Fclose>;
using H5Group = H5Handle<H5Gclose>;
using H5Dataset = H5Handle<H5Dclose>;
using H5Dataspace = H5Handle<H5Sclose>;
using H5Datatype = H5Handle<H5Tclose>;
using H5PropertyList = H5Handle<H5Pclose>;
using H5Attribute = H5Handle<H5Aclose>;

// HDF5's error printing off while a ResultFile call runs: one exception, not a stack dump on
// stderr from every rank.
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

// Throws the runtime error "HDF5 error in CALL: ..." (CALL(WHAT) with `what`), with the innermost
// message on HDF5's error stack (where the failure was first seen), and clears the stack.
[[noreturn]] void throw_hdf5_error(std::string_view call, std::string_view what = {});

// `result` (an id, herr_t or htri_t), or throws as above when it is negative.
template <typename Result>
Result h5_check(Result result, std::string_view call, std::string_view what = {}) {
    if (result < 0) throw_hdf5_error(call, what);
    return result;
}

// Opens `path` read-only with the default (serial) driver; a usage error "cannot <verb> 'path':
// not an HDF5 file" when it is not one.
H5File open_serial_read_only(const std::string& path, const std::string& verb);

// How `type` is stored (little-endian IEEE / two's complement) and held in memory; its name
// ("float32", "float64", "uint64", "int64"); the name of a stored type, or "an unsupported type".
hid_t file_type(ElementType type);
hid_t memory_type(ElementType type);
const char* element_type_name(ElementType type);
std::string stored_type_name(hid_t type);

// Collective (every rank writes the same attribute metadata). Replaces an attribute of that name.
void write_attribute(hid_t object, const std::string& name, const AttributeValue& value);

// A scalar attribute: any string, any integer (as int64), any float (as double); none when there
// is no such attribute. `what` names it in messages.
std::optional<AttributeValue> read_attribute(hid_t object, const std::string& name,
                                             const std::string& what);

// Serial or collective alike.
void write_notes(hid_t dataset, const DatasetNotes& notes, const std::string& what);

// The groups must exist.
void write_group_attributes(hid_t file, const GroupAttributes& groups);

// From `values` contiguous values: no staging copy, the buffer goes straight to MPI-IO.
void write_hyperslab(hid_t dataset, const hsize_t* start, const hsize_t* count, hsize_t values,
                     hid_t type, hid_t transfer, const void* data, const std::string& what);

}  // namespace gpurelay
