// Where this binary is installed, for --version: found from the binary's own path
// (/proc/self/exe), never from a prefix compiled in, so that a prefix moved or copied elsewhere
// (a relocated Spack install, a tree unpacked on another cluster) still names its own decks and
// batch templates. Only the layout below the prefix is compiled in, relative to the binary's
// folder.
#include <filesystem>
#include <string>
#include <system_error>

#include "app/provenance.hpp"

namespace gpurelay {

std::string install_text() {
    namespace fs = std::filesystem;
    std::error_code error;
    // canonical: a link to the binary (a Spack view's bin/) names the prefix that holds it.
    const fs::path bin = fs::canonical("/proc/self/exe", error).parent_path();
    if (error) return "installed: unknown (/proc/self/exe cannot be read)\n";
    // bin/.. normalises to "prefix/": the last, empty name is dropped.
    const auto below_bin = [&](const char* relative) {
        const fs::path path = (bin / relative).lexically_normal();
        return path.has_filename() ? path : path.parent_path();
    };
    const fs::path data = below_bin(GPURELAY_BIN_TO_DATA);
    if (!fs::is_directory(data / "inputs", error)) {
        return "not installed: run from " + bin.string() +
               " (cmake --install puts it in a prefix)\n";
    }
    return "installed in " + below_bin(GPURELAY_BIN_TO_PREFIX).string() + ": decks in " +
           (data / "inputs").string() + ", batch templates in " + (data / "slurm").string() + "\n";
}

}  // namespace gpurelay
