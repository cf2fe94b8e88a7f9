// Which transport runs: the request's candidates from the transports' table, each held against
// its row's needs and what the ranks found; every name a message gives comes from the table.
#include "config/transport_choice.hpp"

#include <algorithm>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using Candidates = std::vector<const TransportRow*>;

// Whether the run moves tensors over pair links (pairs, and a relay's links between stages)
// rather than through a collective.
bool pair_links(const Config& c) {
    return c.pattern == Pattern::pairs || c.pattern == Pattern::relay;
}

// Whether `t` makes the links the run's pattern needs: pair links, or a collective.
bool makes_links(const TransportRow& t, const Config& c) {
    return pair_links(c) ? t.make_pair != nullptr : t.make_collective != nullptr;
}

// Whether `t` runs on the path: on the CPU path MPI's staged form only with staging = "on", and
// its host form only without.
bool runs_on_path(const TransportRow& t, const Config& c, bool cuda) {
    if (cuda) return t.allows.cuda_path;
    return t.allows.cpu_path && t.allows.staged == (c.staging == Staging::on);
}

// The rows a request names: every row for auto.
Candidates rows_named(std::string_view name) {
    Candidates rows;
    for (const TransportRow& t : transport_table()) {
        if (name == kAutoTransport || t.name == name) rows.push_back(&t);
    }
    return rows;
}

// The names of the rows that `keep` keeps, each once, in the table's order.
template <typename Keep>
std::vector<std::string_view> names_where(Keep keep) {
    std::vector<std::string_view> names;
    for (const TransportRow& t : transport_table()) {
        if (keep(t) && std::find(names.begin(), names.end(), t.name) == names.end()) {
            names.push_back(t.name);
        }
    }
    return names;
}

// `transport = "a"`, `transport = "a" or "b"`, `transport = "a", "b" or "c"`.
std::string request_for(const std::vector<std::string_view>& names) {
    std::string text = "transport = ";
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
        ((text += '"') += names[i]) += '"';
    }
    return text;
}

// The rows a request may use, most preferred first: those that run on the path (for auto, also
// making the pattern's links). A transport named keeps its row even where it cannot run, so that
// its refusal says why.
Candidates candidates(const Config& c, bool cuda) {
    const bool any = c.transport == kAutoTransport;
    const Candidates named = rows_named(c.transport);
    Candidates options;
    for (const TransportRow* t : named) {
        if (runs_on_path(*t, c, cuda) && (!any || makes_links(*t, c))) options.push_back(t);
    }
    if (!any && options.empty() && !named.empty()) options.push_back(named.front());
    return options;
}

// Why `t` cannot serve this run: the message for a request that named it, and auto's short form
// ("" when it can, or when the facts do not tell yet).
struct Refusal {
    std::string message, brief;
};

// What the table says `t` refuses of the deck, whatever the ranks found ("" when nothing).
std::string refused_by_deck(const TransportRow& t, const Config& c) {
    if (c.graphs && !t.allows.graphs) {
        return "graphs = true needs " +
               request_for(names_where([](const TransportRow& r) { return r.allows.graphs; })) +
               ": " + std::string(t.why_not.graphs);
    }
    if (c.launch == Launch::device && !t.allows.device_launch) {
        return "launch = \"device\" needs " + device_launch_request() + ": " +
               std::string(t.why_not.device_launch);
    }
    if (!pair_links(c) && !t.make_collective) {
        std::vector<std::string_view> names =
            names_where([](const TransportRow& r) { return r.make_collective != nullptr; });
        names.push_back(kAutoTransport);
        return "pattern = \"" + std::string(to_string(c.pattern)) + "\" needs " +
               request_for(names) + ": " + std::string(t.why_not.collectives);
    }
    return "";
}

Refusal refusal(const TransportRow& t, const Config& c, const RunFacts& f) {
    const std::string named = "transport = \"" + std::string(t.name) + "\"";
    if (f.cuda_path && !(*f.cuda_path ? t.allows.cuda_path : t.allows.cpu_path)) {
        return {named + " needs the CUDA path, but this run is on the CPU", ""};
    }
    if (std::string deck = refused_by_deck(t, c); !deck.empty()) return {deck, ""};
    const bool cuda = f.cuda_path.value_or(true);
    // Where the ranks refuse `t`, the transports that `need` allows on this path and pattern.
    const auto serving = [&](bool TransportAllows::*need) {
        return names_where([&](const TransportRow& r) {
            return r.allows.*need && (cuda ? r.allows.cuda_path : r.allows.cpu_path) &&
                   makes_links(r, c);
        });
    };
    if (f.one_node == false && !t.allows.across_nodes) {
        std::vector<std::string_view> names = serving(&TransportAllows::across_nodes);
        names.push_back(kAutoTransport);
        return {named +
                    " needs each producer and its consumer on one node, but a pair spans two "
                    "nodes; use " +
                    request_for(names),
                "a pair spans two nodes, which " + std::string(t.name) + " refuses"};
    }
    if (f.shared_gpu && !f.shared_gpu->empty() && !t.allows.shared_gpu) {
        const bool pairs = c.pattern == Pattern::pairs;
        std::vector<std::string_view> first = serving(&TransportAllows::shared_gpu);
        first.resize(std::min<std::size_t>(first.size(), 1));  // the most preferred
        return {named + " cannot run two ranks " + (pairs ? "" : "of a group ") + "on one GPU (" +
                    *f.shared_gpu + "); give each rank its own GPU or use " + request_for(first),
                std::string(pairs ? "ranks" : "ranks of a group") + " share a GPU, which " +
                    std::string(t.name) + " refuses"};
    }
    if (f.world_size == 1 && f.cuda_path == true && !t.allows.to_itself_on_gpu) {
        return {named + " needs two ranks on the CUDA path; one rank sends to itself with " +
                    request_for(names_where([](const TransportRow& r) {
                        return r.allows.cuda_path && r.allows.to_itself_on_gpu;
                    })),
                ""};
    }
    return {};
}

// What the deck asks of the transport's settings, whatever the facts: each rule in terms of what
// the named rows allow.
void check_request(const Config& c, const RunFacts& f) {
    const bool any = c.transport == kAutoTransport;
    const Candidates named = rows_named(c.transport);
    const auto some = [&](bool TransportAllows::*trait) {
        return std::any_of(named.begin(), named.end(),
                           [&](const TransportRow* t) { return t->allows.*trait; });
    };
    // (A transport named that a device cannot drive is refused by its row, with its reason.)
    if (c.launch == Launch::device && some(&TransportAllows::device_launch) &&
        c.ipc_engine != IpcEngine::sm) {
        throw usage_error("launch = \"device\" needs " + device_launch_request() +
                          ": the producer's kernel writes the consumer's slot itself and a word "
                          "says it has arrived");
    }
    const std::vector<std::string_view> in_place =
        names_where([](const TransportRow& r) { return r.allows.in_place; });
    if (c.ipc_engine == IpcEngine::sm && (any || !some(&TransportAllows::in_place))) {
        throw usage_error("ipc_engine = \"sm\" needs " + request_for(in_place) + " (got \"" +
                          c.transport + "\"): A writes into the consumer's slot only through the " +
                          std::string(in_place.front()) + " transport's mapping");
    }
    if (c.staging == Staging::on && !any && !some(&TransportAllows::staged) &&
        some(&TransportAllows::cpu_path)) {
        throw usage_error(
            "staging = \"on\" is for " +
            request_for(names_where([](const TransportRow& r) { return r.allows.staged; })) + "; " +
            std::string(named.front()->why_not.staging));
    }
    if (c.launch == Launch::device && f.world_size && *f.world_size > 2) {
        throw usage_error("launch = \"device\" drives one pair (-np 1 or 2), but this run has " +
                          std::to_string(*f.world_size) +
                          " ranks: its producer alone decides where a stopped pass ends");
    }
    if (c.graphs && f.cuda_path == false) {
        throw usage_error(std::string("graphs = true needs the CUDA path, but ") +
                          (c.device == DeviceKind::cpu
                               ? "device = \"cpu\""
                               : "this run is on the CPU (no GPU visible)") +
                          ": host streams cannot be captured in a CUDA graph");
    }
}

}  // namespace

RunFacts facts_from_config(const Config& config) {
    RunFacts facts;
    if (config.device != DeviceKind::auto_select)
        facts.cuda_path = config.device == DeviceKind::cuda;
    return facts;
}

TransportChoice choose_transport(const Config& config, const RunFacts& facts) {
    check_request(config, facts);
    if (!facts.cuda_path && config.transport == kAutoTransport) return {};
    // With the path unknown, an explicit request is held against the needs that do not depend
    // on it (MPI's host-staged form refuses what its host form does, and more).
    const Candidates options = candidates(config, facts.cuda_path.value_or(true));
    if (options.empty()) {
        throw usage_error("transport = \"" + config.transport + "\" is not a transport");
    }
    std::vector<Refusal> refused;
    for (const TransportRow* row : options) {
        Refusal why = refusal(*row, config, facts);
        if (why.message.empty()) {
            TransportChoice choice{facts.cuda_path ? row : nullptr, "",
                                   row->allows.in_place && config.ipc_engine == IpcEngine::sm};
            if (!refused.empty() && !refused.front().brief.empty()) {
                choice.reason = refused.front().brief + ": auto chose " + std::string(row->name);
            }
            return choice;
        }
        refused.push_back(std::move(why));
    }
    std::string message = refused.front().message;
    if (config.transport == kAutoTransport) {
        message = "no transport suits this run: " + message;
        for (std::size_t i = 1; i < refused.size(); ++i) message += "; " + refused[i].message;
    }
    throw usage_error(message);
}

std::vector<std::string_view> transport_names() {
    std::vector<std::string_view> names = names_where([](const TransportRow&) { return true; });
    names.insert(names.begin(), kAutoTransport);
    return names;
}

std::string device_launch_request() {
    return request_for(names_where([](const TransportRow& r) { return r.allows.device_launch; })) +
           " with ipc_engine = \"sm\"";
}

std::string transport_table_markdown() {
    struct Column {
        std::string_view heading;
        bool (*allows)(const TransportRow&);
    };
    static constexpr Column kColumns[] = {
        {"CUDA path", [](const TransportRow& t) { return t.allows.cuda_path; }},
        {"CPU path", [](const TransportRow& t) { return t.allows.cpu_path; }},
        {"staged", [](const TransportRow& t) { return t.allows.staged; }},
        {"across nodes", [](const TransportRow& t) { return t.allows.across_nodes; }},
        {"ranks share a GPU", [](const TransportRow& t) { return t.allows.shared_gpu; }},
        {"graphs", [](const TransportRow& t) { return t.allows.graphs; }},
        {"pairs, relays", [](const TransportRow& t) { return t.make_pair != nullptr; }},
        {"collectives", [](const TransportRow& t) { return t.make_collective != nullptr; }},
        {"A in place", [](const TransportRow& t) { return t.allows.in_place; }},
        {"launch = device", [](const TransportRow& t) { return t.allows.device_launch; }},
        {"to itself on a GPU", [](const TransportRow& t) { return t.allows.to_itself_on_gpu; }},
    };
    std::string header = "| transport |", rule = "| --- |";
    for (const Column& column : kColumns) {
        ((header += ' ') += column.heading) += " |";
        rule += " --- |";
    }
    std::string text = header + "\n" + rule + "\n";
    for (const TransportRow& t : transport_table()) {
        ((text += "| `") += t.name) += t.allows.staged ? "`, staged |" : "` |";
        for (const Column& column : kColumns) text += column.allows(t) ? " yes |" : " no |";
        text += '\n';
    }
    return text;
}

}  // namespace gpurelay
