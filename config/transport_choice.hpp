// Which transport a run uses: the transports' table held against what the deck asks (validation)
// and then what the ranks found (set-up).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "transport/transport_table.hpp"

namespace gpurelay {

// What the ranks found, as far as it is known: nullopt where it is not yet.
struct RunFacts {
    std::optional<bool> cuda_path;
    std::optional<bool> one_node;  // every pair (or group) on one node
    // A GPU two ranks of one pair or group share ("host bus-id"), or "" when none do.
    std::optional<std::string> shared_gpu;
    std::optional<int> world_size;
};

// What the deck alone says: the path when `device` names it, nothing else.
RunFacts facts_from_config(const Config& config);

struct TransportChoice {
    const TransportRow* row = nullptr;  // nullptr: not decided by these facts yet
    // Why auto chose it, when it passed over a transport it would rather have used.
    std::string reason;
    // ipc_engine = "sm" over a transport that allows it: A writes into the consumer's slot, so
    // the producer has no slots of its own.
    bool a_writes_in_place = false;
};

// The transport for `config` given `facts`, or a usage error naming the need that refuses it.
TransportChoice choose_transport(const Config& config, const RunFacts& facts);

// What the key transport accepts: "auto", then each name of the table once, in its order.
std::vector<std::string_view> transport_names();
// What launch = "device" asks of the transport (`transport = "ipc" with ipc_engine = "sm"`).
std::string device_launch_request();
// The table as CONFIG.md gives it under the key transport, most preferred first.
std::string transport_table_markdown();

}  // namespace gpurelay
