#include "app/provenance.hpp"

#include <cstdlib>
#include <ctime>

#include "app/git_hash.hpp"
#include "app/version.hpp"
#include "comm/mpi_session.hpp"

namespace gpurelay {

std::string version_text() {
    return std::string("gpurelay ") + kVersion + " (git " + kGitHash + ")\nCUDA " +
           cuda_version_string() + "\nNCCL " + nccl_version_string() + "\nMPI " +
           mpi_version_string() + "\nHDF5 " + hdf5_version() + "\n";
}

std::string git_hash() { return kGitHash; }

std::string versions_line() {
    return std::string("gpurelay ") + kVersion + " (git " + kGitHash + "), CUDA " +
           cuda_version_string() + ", NCCL " + nccl_version_string() + ", " + mpi_version_string() +
           ", HDF5 " + hdf5_version();
}

std::string utc_timestamp() {
    const std::time_t now = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return text;
}

Attributes root_attributes(const Setup& setup, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& gpus) {
    Attributes attrs;
    const Config& config = setup.config;
    for (const auto& key : config_keys()) {
        const std::string text = config_value_toml(config, key.name);
        if (text.size() >= 2 && text.front() == '"') {
            attrs.emplace_back(std::string(key.name), text.substr(1, text.size() - 2));
            continue;
        }
        char* end = nullptr;
        const long long integer = std::strtoll(text.c_str(), &end, 10);
        if (end != nullptr && *end == '\0' && !text.empty()) {
            attrs.emplace_back(std::string(key.name), static_cast<std::int64_t>(integer));
            continue;
        }
        const double real = std::strtod(text.c_str(), &end);
        if (end != nullptr && *end == '\0' && !text.empty()) {
            attrs.emplace_back(std::string(key.name), real);
        } else {
            attrs.emplace_back(std::string(key.name), text);
        }
    }
    attrs.emplace_back("config_toml", config_to_toml(config));
    attrs.emplace_back("gpurelay_version", std::string(kVersion));
    attrs.emplace_back("git_hash", std::string(kGitHash));
    attrs.emplace_back("cuda_version", cuda_version_string());
    attrs.emplace_back("nccl_version", nccl_version_string());
    attrs.emplace_back("mpi_version", mpi_version_string());
    attrs.emplace_back("hdf5_version", hdf5_version());
    attrs.emplace_back("backend",
                       std::string(setup.device->backend() == Backend::cuda ? "cuda" : "cpu"));
    attrs.emplace_back("transport_used", setup.transport->name());
    attrs.emplace_back("world_size", static_cast<std::int64_t>(hosts.size()));
    attrs.emplace_back("pair_count", static_cast<std::int64_t>(setup.placement.pairs));
    std::string host_list, gpu_list;
    for (std::size_t r = 0; r < hosts.size(); ++r) {
        host_list += (r ? "," : "") + hosts[r];
        gpu_list += (r ? "," : "") + gpus[r];
    }
    attrs.emplace_back("rank_hosts", host_list);
    attrs.emplace_back("rank_devices", gpu_list);
    attrs.emplace_back("started_utc", utc_timestamp());
    // 0 until the close of a complete, verified run sets it: a reader of a .partial file finds
    // it too (and a resumed run starts from 0 again).
    attrs.emplace_back("verified", std::int64_t{0});
    return attrs;
}

}  // namespace gpurelay
