// The rule for the output's names (PATH, PATH.partial and the working names beside them), what
// a fresh run may replace, and the rename that publishes a finished file.
#include <hdf5.h>

#include <filesystem>
#include <optional>
#include <system_error>
#include <variant>

#include "io/h5.hpp"
#include "io/output_path.hpp"
#include "io/result_layout.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

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
            const std::optional<AttributeValue> value = read_attribute(file.get(), name, name);
            const auto* number = value ? std::get_if<std::int64_t>(&*value) : nullptr;
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

}  // namespace

void check_final_path(const std::string& path, bool overwrite) {
    check_output_target("output", path, {".partial", ".partial.tmp", ".lock"},
                        overwrite ? "" : "--overwrite");
}

void publish_partial(const std::string& partial_path, const std::string& path, bool overwrite) {
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

void ResultFile::publish_complete_partial(const std::string& path, bool overwrite) {
    check_final_path(path, overwrite);
    publish_partial(path + ".partial", path, overwrite);
}

std::string ResultFile::fresh_start_advice(const std::string& path) {
    QuietHdf5Errors quiet;
    return finishable_contents(path + ".partial").empty()
               ? "run again without --resume to start afresh (a fresh run replaces it)"
               : "run again with --overwrite instead of --resume to start afresh";
}

void ResultFile::check_target(const std::string& path, bool overwrite) {
    QuietHdf5Errors quiet;
    check_final_path(path, overwrite);
    // What stands at PATH.partial must be a regular file, and one that --resume could finish is
    // kept unless `overwrite`.
    const std::string partial_path = path + ".partial";
    check_output_target("output", partial_path, {}, "");
    if (overwrite) return;
    if (const std::string kept = finishable_contents(partial_path); !kept.empty()) {
        throw usage_error("'" + partial_path + "' " + kept +
                          ": use --resume, or --overwrite to discard it");
    }
}

}  // namespace gpurelay
