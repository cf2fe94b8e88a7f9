// HDF5's error stack as one line, the serial read-only open, and the library's version.
#include "io/h5_call.hpp"

#include <algorithm>
#include <vector>

#include "io/result_file.hpp"

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

}  // namespace

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

void throw_hdf5_error(const std::string& call) {
    throw runtime_error("HDF5 error in " + call + ": " + hdf5_error_detail());
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
    unsigned major = 0;
    unsigned minor = 0;
    unsigned release = 0;
    QuietHdf5Errors quiet;
    h5_check(H5get_libversion(&major, &minor, &release), "H5get_libversion");
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace gpurelay
