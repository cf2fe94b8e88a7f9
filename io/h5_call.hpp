// Checked HDF5 calls: a failed call becomes one exception with one line of text (the innermost
// message on HDF5's error stack), while HDF5's own printing is off.
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>

#include "io/h5_handle.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

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

// The innermost description on HDF5's error stack (where the failure was first seen), as one
// line; when that is only MPI's error string, the step that reported it comes first
// ("MPI_File_open failed: MPI_ERR_NO_SUCH_FILE: ..."). Clears the stack.
std::string hdf5_error_detail();

// Throws the runtime error "HDF5 error in <call>: <innermost message>".
[[noreturn]] void throw_hdf5_error(const std::string& call);

// Returns `result` (an id, herr_t or htri_t) or, when it is negative, throws "HDF5 error in
// CALL: ..." (CALL(WHAT) with `what`): the message is made only on failure.
template <typename Result>
Result h5_check(Result result, std::string_view call) {
    if (result < 0) throw_hdf5_error(std::string(call));
    return result;
}
template <typename Result>
Result h5_check(Result result, std::string_view call, std::string_view what) {
    if (result < 0) throw_hdf5_error(std::string(call) + "(" + std::string(what) + ")");
    return result;
}

// Opens `path` read-only with the default (serial) driver; a usage error "cannot <verb> 'path':
// not an HDF5 file" when it is not one.
H5File open_serial_read_only(const std::string& path, const std::string& verb);

}  // namespace gpurelay
