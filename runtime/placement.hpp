// Where this process may run: the cores its affinity allows, their NUMA nodes, and the NUMA node
// of its GPU, read from the kernel (sched_getaffinity, sysfs); libnuma is not needed.
#pragma once

#include <string>
#include <vector>

namespace gpurelay {

struct Placement {
    std::string cores;      // the allowed cores, compactly: "0-7,16"
    std::string core_numa;  // their NUMA nodes: "0", "0-1"; "" when sysfs does not say
    int core_count = 0;     // how many cores are allowed
    int online_cores = 0;   // how many the machine has online
    std::string gpu_numa;   // the GPU's NUMA node; "" on the CPU path or when unknown
};

// This process's placement; `pci_bus_id` (empty on the CPU path) names its GPU. Never throws: a
// figure the kernel does not give is left empty.
Placement this_process_placement(const std::string& pci_bus_id);

// Sorted, distinct numbers as ranges: {0,1,2,3,7} -> "0-3,7".
std::string range_list_text(const std::vector<int>& numbers);
// The numbers such a text lists, sorted and distinct: "0-3,7" -> {0,1,2,3,7}; {} if not a list.
std::vector<int> range_list_numbers(const std::string& text);

}  // namespace gpurelay
