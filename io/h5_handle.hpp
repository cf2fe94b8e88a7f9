// RAII for HDF5 ids (the HighFive idea in one small file): one owner per hid_t, move-only,
// closed by the matching H5?close when the owner goes away; destructors never throw.
#pragma once

#include <hdf5.h>

#include <utility>

namespace gpurelay {

// The close function of one kind of HDF5 id (H5Fclose, H5Dclose, ...).
using H5CloseFunction = herr_t (*)(hid_t);

// Owns one HDF5 id of the kind that `Close` closes. An invalid id (< 0) owns nothing.
template <H5CloseFunction Close>
class H5Handle {
  public:
    H5Handle() noexcept = default;
    // Takes ownership of `id` (a negative id, i.e. a failed call, owns nothing).
    explicit H5Handle(hid_t id) noexcept : id_(id) {}
    ~H5Handle() { reset(); }

    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    H5Handle(H5Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
    H5Handle& operator=(H5Handle&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = std::exchange(other.id_, H5I_INVALID_HID);
        }
        return *this;
    }

    // The id, still owned by this handle.
    hid_t get() const noexcept { return id_; }
    // Whether this handle owns an id.
    bool valid() const noexcept { return id_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }

    // Gives up ownership without closing; the caller closes the id.
    hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }

    // Closes the id now and returns the close status, so a caller that must know whether the close
    // worked (a file's final flush) can turn a failure into an exception. Never throws.
    herr_t close() noexcept {
        if (id_ < 0) {
            return 0;
        }
        return Close(std::exchange(id_, H5I_INVALID_HID));
    }

    // Closes the id quietly, ignoring a failure: destructors and unwinding must not throw.
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

}  // namespace gpurelay
