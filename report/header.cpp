// The report's header, printed before the steps (render.hpp's print_run_header).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/number_text.hpp"
#include "report/render.hpp"

namespace gpurelay {
namespace {

constexpr std::size_t kReportColumns = 100;

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    for (; bytes >= 1024.0 && u < 4; ++u) bytes /= 1024.0;
    return fmt::format("{:.{}f} {}", bytes, u == 0 ? 0 : 2, units[u]);
}

std::string human_bytes(std::uint64_t bytes) { return human_bytes(static_cast<double>(bytes)); }

// The keys the run sets away from their defaults, as "key=value" items. The debug_* keys are the
// tests' and never shown; --print-config prints the whole deck.
std::vector<std::string> changed_keys(const Config& config) {
    const Config defaults;
    std::vector<std::string> items;
    for (const auto& key : config_keys()) {
        if (key.name.substr(0, 6) == "debug_") continue;
        const std::string value = config_value_toml(config, key.name);
        if (value != config_value_toml(defaults, key.name))
            items.push_back(std::string(key.name) + '=' + value);
    }
    return items;
}

// "config (...): key=value ..." wrapped at kReportColumns, the lines after the first indented.
std::string wrapped_config(const Config& config) {
    std::string text = "config (not at their defaults; --print-config prints all):";
    const std::vector<std::string> items = changed_keys(config);
    if (items.empty()) return text + " none";
    std::size_t line = text.size();
    for (const std::string& item : items) {
        const bool wrap = line + 1 + item.size() > kReportColumns && line > 2;
        text += (wrap ? "\n  " : " ") + item;
        line = (wrap ? 2 : line + 1) + item.size();
    }
    return text;
}

// What a rank is in its pattern, in the pattern's words: "pair 0 producer", "stage 1 of group 0
// (relay)", "group 0 consumer, /y row 1".
std::string rank_part(const RunSummary& s, std::size_t r) {
    const RankInfo& info = s.ranks[r];
    const auto group_size = static_cast<std::size_t>(s.group_size > 0 ? s.group_size : 1);
    if (s.config.pattern == Pattern::pairs) return fmt::format("pair {} {}", info.pair, info.role);
    if (s.config.pattern == Pattern::relay)
        return fmt::format("stage {} of group {} ({})", r % group_size, r / group_size, info.role);
    // A collective's `pair` is the rank's row of /y (its receivers, or every rank).
    return fmt::format("group {} {}, /y row {}", r / group_size, info.role, info.pair);
}

// Each distinct value with how many times it occurs, the commonest first, the first `shown` of
// them: "host memory (CPU path): 64", "a: 8, b: 8 and 2 others".
std::string counted(const std::vector<std::string>& values, std::size_t shown) {
    std::map<std::string, std::size_t> counts;
    for (const std::string& value : values) ++counts[value];
    std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (std::size_t i = 0; i < sorted.size() && i < shown; ++i)
        text += fmt::format("{}{} ({})", i == 0 ? "" : ", ", sorted[i].first, sorted[i].second);
    if (sorted.size() > shown) text += fmt::format(" and {} others", sorted.size() - shown);
    return text;
}

std::string count_range(const std::map<std::string, std::size_t>& per_host) {
    const auto [least, most] = std::minmax_element(
        per_host.begin(), per_host.end(), [](auto& a, auto& b) { return a.second < b.second; });
    return range_text(least->second, most->second);
}

void print_rank_summary(std::FILE* out, const RunSummary& s) {
    std::map<std::string, std::size_t> ranks_per_host, gpus_per_host;
    std::set<std::string> gpu_seen;
    std::vector<std::string> hosts, roles, links, placements;
    for (const RankInfo& rank : s.ranks) {
        ++ranks_per_host[rank.host];
        if (!rank.bus_id.empty() && gpu_seen.insert(rank.host + " " + rank.bus_id).second)
            ++gpus_per_host[rank.host];
        hosts.push_back(rank.host);
        roles.push_back(rank.role);
        links.push_back(rank.peer_link);
        placements.push_back(placement_text(rank).empty() ? "not known" : placement_text(rank));
    }
    const std::string gpus = gpus_per_host.empty() ? ", no GPU (" + s.backend + " path)"
                                                   : " x " + count_range(gpus_per_host) + " GPU(s)";
    fmt::print(out,
               "ranks: {} = {} host(s) x {} rank(s){}; hosts (ranks): {}; roles: {}\n  to their "
               "peers: {}; placement: {}\n",
               s.ranks.size(), ranks_per_host.size(), count_range(ranks_per_host), gpus,
               counted(hosts, 4), counted(roles, 4), counted(links, 3), counted(placements, 3));
}

void print_rank_lines(std::FILE* out, const RunSummary& s) {
    if (s.ranks.size() > kRanksListed) return print_rank_summary(out, s);
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& info = s.ranks[r];
        const std::string placement = placement_text(info);
        fmt::print(out, "rank {}: {} on {}, {}{}{}; to its peer: {}{}{}\n", r, rank_part(s, r),
                   info.host, info.device, info.bus_id.empty() ? "" : " ", info.bus_id,
                   info.peer_link, placement.empty() ? "" : "; ", placement);
    }
}

// A resumed run: where this launch starts, so that the steps before it are not looked for here.
void print_resume(std::FILE* out, const RunSummary& s) {
    if (s.resumed_step < 0) return;
    const Config& c = s.config;
    const std::size_t passes = c.overlap == OverlapMode::compare ? 2 : 1;
    const bool overlap = c.overlap == OverlapMode::on || s.resumed_pass == 1;
    fmt::print(
        out,
        "resumed: from step {} of the overlap={} pass ({} of {}){} of {}.partial; the "
        "steps before it ran in an earlier launch (in the file, not in this report)\n",
        s.resumed_step, overlap ? "on" : "off", s.resumed_pass + 1, passes,
        c.several_sizes() ? fmt::format(", size {} of {}", s.resumed_size + 1, c.sizes.size()) : "",
        c.output);
}

std::string memory_text(const RunSummary& s) {
    const Config& c = s.config;
    const std::string slots = fmt::format(
        "tensor slots of {}{}, 2 x {} on a consumer and {} on a producer{}",
        human_bytes(c.largest().tensor_bytes()), c.several_sizes() ? " (the largest size)" : "",
        c.depth, c.depth,
        c.c_elements > 0 && c.c_iterations > 0 ? "; C's " + human_bytes(c.c_elements * 4) : "");
    if (s.backend == "cuda") {
        return fmt::format(
            "memory per rank (largest): device {} ({}); pinned host {} (the writer's buffers and "
            "the mismatch counters)",
            human_bytes(s.device_bytes), slots, human_bytes(s.host_bytes));
    }
    // The CPU path holds everything in host memory: one figure, the largest rank's whole.
    return fmt::format(
        "memory per rank (largest): host {} ({}; the writer's buffers and the mismatch counters)",
        human_bytes(s.total_bytes), slots);
}

}  // namespace

void print_run_header(std::FILE* out, const RunSummary& s) {
    const Config& c = s.config;
    const std::string layout =
        c.pattern == Pattern::pairs
            ? fmt::format("{} pair(s)", s.pairs)
            : fmt::format("{} in {} group(s) of {}", to_string(c.pattern), s.groups, s.group_size);
    fmt::print(out, "gpurelay: {} rank(s), {}, {} path, transport {}{}{}\n", s.world_size, layout,
               s.backend, s.transport,
               s.transport_note.empty() ? "" : (" (" + s.transport_note + ")"),
               c.graphs ? ", graphs on" : "");
    fmt::print(out, "{}\n", wrapped_config(c));
    fmt::print(out, "versions: {}\n", s.versions);
    print_rank_lines(out, s);
    print_placement_notes(out, s);
    if (!s.host_wait.empty())
        fmt::print(out, "host waits: {} ({})\n", s.host_wait, s.host_wait_reason);
    fmt::print(out, "{}\n", memory_text(s));
    fmt::print(out, "output: {} (up to {})\n", c.output, human_bytes(s.output_bytes));
    print_resume(out, s);
    std::fflush(out);
}

}  // namespace gpurelay
