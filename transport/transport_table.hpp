// The transports a run can open, one row each: what it needs and allows, why not, its factories.
// Validation, auto's choice and CONFIG.md read the rows (config/transport_choice.cpp), set-up makes
// the chosen row's transport (app/setup.cpp), the report names it: no other code tells them apart.
#pragma once

#include <span>
#include <string_view>

#include "transport/transport.hpp"

namespace gpurelay {

struct TransportAllows {
    bool cuda_path = false;  // runs on the CUDA path
    bool cpu_path = false;   // runs on the CPU path
    bool staged = false;  // through pinned host buffers: on the CPU path only with staging = "on"
    bool across_nodes = false;      // a pair may span two nodes
    bool shared_gpu = false;        // two ranks of a pair or group may share one GPU
    bool graphs = false;            // its work can be captured in a CUDA graph
    bool to_itself_on_gpu = false;  // one rank may send to itself on the CUDA path
    bool in_place = false;          // A may write into the consumer's slots (ipc_engine = "sm")
    // Both roles address its slots and flags, so kernels can run its protocol (launch = device).
    bool device_launch = false;
};

// Why a transport refuses what a run asks: the reason the refusal gives.
struct TransportWhyNot {
    std::string_view graphs = {};         // its work cannot be captured
    std::string_view collectives = {};    // it runs no collective
    std::string_view device_launch = {};  // a device cannot drive it
    std::string_view staging = {};        // staging = "on" does not suit it (on the CPU path)
};

struct TransportRow {
    std::string_view name;  // as a deck names it (MPI's two forms share "mpi": staging picks)
    TransportAllows allows;
    TransportWhyNot why_not;
    PairFactory* make_pair = nullptr;              // pairs, and each link of a relay
    CollectiveFactory* make_collective = nullptr;  // broadcast and all-reduce; nullptr: none
};

// Every transport, most preferred first: auto takes the first whose needs the run meets.
std::span<const TransportRow> transport_table();

}  // namespace gpurelay
