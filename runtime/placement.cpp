#include "runtime/placement.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

namespace gpurelay {
namespace {

// The NUMA node a cpu belongs to: sysfs links /sys/devices/system/cpu/cpuN/nodeK; -1 if none.
int numa_node_of_core(int core) {
    std::error_code error;
    const std::filesystem::path dir = "/sys/devices/system/cpu/cpu" + std::to_string(core);
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 4 && name.rfind("node", 0) == 0 &&
            std::all_of(name.begin() + 4, name.end(),
                        [](unsigned char c) { return std::isdigit(c); })) {
            return std::stoi(name.substr(4));
        }
    }
    return -1;
}

// The GPU's NUMA node from sysfs; "" when unknown (-1 means the platform has no NUMA to say).
// sysfs names PCI devices "0000:01:00.0" in lower case; CUDA may give an 8-digit domain.
std::string gpu_numa_node(std::string bus_id) {
    if (bus_id.empty()) return "";
    std::transform(bus_id.begin(), bus_id.end(), bus_id.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::size_t colon = bus_id.find(':');
    if (colon != std::string::npos && colon > 4) bus_id.erase(0, colon - 4);
    std::ifstream file("/sys/bus/pci/devices/" + bus_id + "/numa_node");
    int node = -1;
    if (!(file >> node) || node < 0) return "";
    return std::to_string(node);
}

}  // namespace

std::string range_list_text(const std::vector<int>& numbers) {
    std::string text;
    for (std::size_t i = 0; i < numbers.size();) {
        std::size_t j = i;
        while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
        if (!text.empty()) text += ',';
        text += std::to_string(numbers[i]);
        if (j > i) {
            text += '-';
            text += std::to_string(numbers[j]);
        }
        i = j + 1;
    }
    return text;
}

std::vector<int> range_list_numbers(const std::string& text) {
    std::set<int> numbers;
    const char* at = text.data();
    const char* const end = at + text.size();
    while (at < end) {
        int first = 0, last = 0;
        auto read = std::from_chars(at, end, first);
        if (read.ec != std::errc{} || first < 0) return {};
        last = first;
        if (read.ptr < end && *read.ptr == '-') {
            read = std::from_chars(read.ptr + 1, end, last);
            if (read.ec != std::errc{} || last < first) return {};
        }
        for (int n = first; n <= last; ++n) numbers.insert(n);
        if (read.ptr < end && *read.ptr != ',') return {};
        at = read.ptr + 1;
    }
    return {numbers.begin(), numbers.end()};
}

Placement this_process_placement(const std::string& pci_bus_id) {
    Placement placement;
    placement.online_cores = static_cast<int>(std::max(0L, ::sysconf(_SC_NPROCESSORS_ONLN)));
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    std::vector<int> cores;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        for (int core = 0; core < CPU_SETSIZE; ++core) {
            if (CPU_ISSET(core, &allowed)) cores.push_back(core);
        }
    }
    std::set<int> nodes;
    bool every_node_known = !cores.empty();
    for (const int core : cores) {
        const int node = numa_node_of_core(core);
        if (node < 0) every_node_known = false;
        nodes.insert(node);
    }
    placement.cores = range_list_text(cores);
    placement.core_count = static_cast<int>(cores.size());
    if (every_node_known) placement.core_numa = range_list_text({nodes.begin(), nodes.end()});
    placement.gpu_numa = gpu_numa_node(pci_bus_id);
    return placement;
}

}  // namespace gpurelay
