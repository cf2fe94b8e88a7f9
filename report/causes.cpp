// What the placement says, an unstable step's likely causes and what to do (judge.cpp reads them).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/number_text.hpp"
#include "report/render.hpp"
#include "runtime/gpu_clocks.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

// A GPU that several ranks share time-sliced (no MPS): its "host bus-id" and the ranks.
struct SharedGpu {
    std::string gpu;
    std::vector<int> ranks;
};
std::vector<SharedGpu> time_sliced_gpus(const RunSummary& s) {
    std::map<std::string, std::vector<int>> gpus;
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& rank = s.ranks[r];
        if (rank.peer_link.find("time-sliced") != std::string::npos)
            gpus[rank.host + " " + rank.bus_id].push_back(static_cast<int>(r));
    }
    std::vector<SharedGpu> shared;
    for (auto& [gpu, ranks] : gpus)
        if (ranks.size() > 1) shared.push_back({gpu, ranks});
    return shared;
}

bool away_from_gpu(const RankInfo& rank) {
    return !rank.gpu_numa.empty() && !rank.core_numa.empty() && rank.core_numa != rank.gpu_numa;
}

// "1", "0 and 1", "0, 1 and 2"; more ranks as ranges ("0-31,40"), which stay short at any count.
std::string rank_list(const std::vector<int>& ranks) {
    if (ranks.size() > 3) return range_list_text(ranks);
    std::string text;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        text += i == 0 ? "" : (i + 1 == ranks.size() ? " and " : ", ");
        text += std::to_string(ranks[i]);
    }
    return text;
}

std::string mhz(double value) { return number_text("{:.0f}", value); }

// "rank 1 has 5 working threads on 1 core", or "ranks 1 and 2 have up to 5 ... on 1 core".
std::string crowded_text(const CrowdedRanks& c) {
    const bool one = c.ranks.size() == 1;
    return fmt::format("{} {} {} {} working threads on {} core{}", one ? "rank" : "ranks",
                       rank_list(c.ranks), one ? "has" : "have up to", c.most_threads,
                       c.fewest_cores, c.fewest_cores == 1 ? "" : "s");
}

// "ranks 0 and 1 share GPU vm 0000:01:00.0", or for several GPUs "16 GPUs are each shared by 2
// to 4 ranks (ranks 0-3 share GPU vm 0000:01:00.0, ...)": one phrase at any count.
std::string shared_gpus_text(const std::vector<SharedGpu>& gpus) {
    const SharedGpu& first = gpus.front();
    const std::string one = "ranks " + rank_list(first.ranks) + " share GPU " + first.gpu;
    if (gpus.size() == 1) return one;
    const auto [least, most] = std::minmax_element(
        gpus.begin(), gpus.end(), [](auto& a, auto& b) { return a.ranks.size() < b.ranks.size(); });
    return fmt::format("{} GPUs are each shared by {} ranks ({}, ...)", gpus.size(),
                       range_text(least->ranks.size(), most->ranks.size()), one);
}

std::vector<int> ranks_away_from_gpu(const RunSummary& s) {
    std::vector<int> away;
    for (std::size_t r = 0; r < s.ranks.size(); ++r)
        if (away_from_gpu(s.ranks[r])) away.push_back(static_cast<int>(r));
    return away;
}

// "rank 1 runs on NUMA node 0, its GPU on 1", or "ranks 0-7 run on other NUMA nodes than their
// GPUs' (rank 0 on node 0, its GPU on 1)".
std::string away_text(const RunSummary& s, const std::vector<int>& away) {
    const RankInfo& first = s.ranks[static_cast<std::size_t>(away.front())];
    if (away.size() == 1) {
        return fmt::format("rank {} runs on NUMA node {}, its GPU on {}", away.front(),
                           first.core_numa, first.gpu_numa);
    }
    return fmt::format(
        "ranks {} run on other NUMA nodes than their GPUs' (rank {} on node {}, its GPU on {})",
        rank_list(away), away.front(), first.core_numa, first.gpu_numa);
}

// What to do about where the ranks run, first among the remedies; "" where nothing is known to
// be wrong. Binding cannot give a host more cores: there the advice is fewer threads a node.
std::string placement_remedy(const RunSummary& s, bool misplaced) {
    if (const std::vector<HostLoad> loads = oversubscribed_hosts(s); !loads.empty()) {
        return fmt::format("a core for each working thread (fewer ranks on {}, or {} cores)",
                           loads.front().host, loads.front().threads);
    }
    if (!misplaced && crowded_ranks(s).ranks.empty()) return "";
    return std::string("bind ranks to cores") + (s.backend == "cuda" ? " near their GPU" : "") +
           " (" + binding_command(s) + ")";
}

void causes_and_remedies(const RunSummary& s, const PassSummary& p,
                         std::vector<std::string>& causes, std::vector<std::string>& remedies) {
    for (const HostLoad& load : oversubscribed_hosts(s))
        causes.push_back(fmt::format(
            "{} threads of {} rank(s) on {} cores of {} (CPU path): steps wait for a core",
            load.threads, load.ranks, load.cores, load.host));
    if (const std::vector<SharedGpu> gpus = time_sliced_gpus(s); !gpus.empty()) {
        causes.push_back(shared_gpus_text(gpus) + " time-sliced");
        remedies.push_back("run under MPS (scripts/with-mps mpirun ...)");
    }
    if (const CrowdedRanks crowded = crowded_ranks(s); !crowded.ranks.empty())
        causes.push_back(crowded_text(crowded));
    const std::string names = clock_slowdown_names(p.clock_reasons);
    if (p.clocks_measured && ((p.clock_reasons != 0 && !names.empty()) ||
                              p.sm_clock_end_mhz < 0.95 * p.sm_clock_start_mhz)) {
        causes.push_back(fmt::format("the SM clock went {} -> {} MHz{}", mhz(p.sm_clock_start_mhz),
                                     mhz(p.sm_clock_end_mhz),
                                     names.empty() ? "" : " (" + names + ")"));
    }
    // Away from its GPU's node, or free to run on several nodes.
    const std::vector<int> away = ranks_away_from_gpu(s);
    if (!away.empty()) causes.push_back(away_text(s, away));
    const bool misplaced =
        !away.empty() || std::any_of(s.ranks.begin(), s.ranks.end(), [](auto& r) {
            return r.core_numa.find_first_of(",-") != std::string::npos;
        });
    if (const std::string remedy = placement_remedy(s, misplaced); !remedy.empty())
        remedies.insert(remedies.begin(), remedy);
    if (causes.empty()) causes.push_back("none seen here (other work on the node, interrupts)");
    remedies.push_back("more steps");
    remedies.push_back("for A/B: scripts/sweep --repeat N, then scripts/compare");
}

void print_clocks(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    if (s.backend != "cuda") return;
    if (!p.clocks_measured) {
        if (&p == &s.passes.front())
            fmt::print(out,
                       "  GPU clock: not measured (no NVML in this build, or its calls failed)\n");
        return;
    }
    const std::string names = clock_slowdown_names(p.clock_reasons);
    fmt::print(out,
               "  GPU clock (SM, the slowest rank): {} MHz where the timed steps start, {} MHz "
               "where they end, of {} MHz; slowdowns seen: {}\n",
               mhz(p.sm_clock_start_mhz), mhz(p.sm_clock_end_mhz), mhz(p.sm_clock_max_mhz),
               names.empty() ? "none" : names);
}

}  // namespace

std::vector<HostLoad> oversubscribed_hosts(const RunSummary& s) {
    std::vector<HostLoad> loaded;
    if (s.backend != "cpu") return loaded;
    std::map<std::string, HostLoad> hosts;
    // The ranks of a host may share cores or be bound to one each: the cores any of them may use.
    std::map<std::string, std::set<int>> host_cores;
    for (const RankInfo& rank : s.ranks) {
        HostLoad& load = hosts[rank.host];
        load.host = rank.host;
        ++load.ranks;
        load.threads += rank.host_threads;
        load.cores = std::max(load.cores, rank.core_count);
        for (const int core : range_list_numbers(rank.cores)) host_cores[rank.host].insert(core);
    }
    for (auto& [host, load] : hosts) {
        load.cores = std::max(load.cores, static_cast<int>(host_cores[host].size()));
        if (load.cores > 0 && load.threads > load.cores) loaded.push_back(load);
    }
    return loaded;
}

CrowdedRanks crowded_ranks(const RunSummary& s) {
    CrowdedRanks crowded;
    // A host whose ranks together outnumber its cores is said once, as a host.
    std::set<std::string> loaded;
    for (const HostLoad& load : oversubscribed_hosts(s)) loaded.insert(load.host);
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& rank = s.ranks[r];
        if (rank.core_count <= 0 || rank.host_threads <= rank.core_count ||
            loaded.count(rank.host) > 0)
            continue;
        crowded.fewest_cores = crowded.ranks.empty()
                                   ? rank.core_count
                                   : std::min(crowded.fewest_cores, rank.core_count);
        crowded.most_threads = std::max(crowded.most_threads, rank.host_threads);
        crowded.ranks.push_back(static_cast<int>(r));
    }
    return crowded;
}

std::string binding_command(const RunSummary& s) {
    int threads = 1;
    for (const RankInfo& rank : s.ranks) threads = std::max(threads, rank.host_threads);
    return threads == 1 ? "mpirun --bind-to core --map-by numa"
                        : fmt::format("mpirun --map-by numa:PE={} --bind-to core", threads);
}

std::string waiting_cause(const RunSummary& s) {
    if (const std::vector<HostLoad> loads = oversubscribed_hosts(s); !loads.empty()) {
        return fmt::format(
            "phases timed while waiting for a core: on the CPU path with {} busy "
            "threads on {} cores ({}) the phase times measure the scheduler",
            loads.front().threads, loads.front().cores, loads.front().host);
    }
    if (const std::vector<SharedGpu> gpus = time_sliced_gpus(s); !gpus.empty()) {
        return fmt::format(
            "ranks {} share GPU {} time-sliced: the phase times measure the driver "
            "switching between them",
            rank_list(gpus.front().ranks), gpus.front().gpu);
    }
    return "";
}

Stability step_stability(const PassSummary& p) {
    const PhaseStats& step = p.phase(Phase::step);
    const double spread = step.p90 / step.median;
    return {spread, step.cv, step.max / step.median, spread - 1.0 > kUnstableStepSpread};
}

void print_stability(std::FILE* out, const RunSummary& s, const PassSummary& p, bool& causes_said) {
    const Stability st = step_stability(p);
    if (std::isnan(st.p90_over_median)) return;
    std::string numbers;
    for (const std::int64_t step : p.slow_step_numbers)
        numbers += (numbers.empty() ? " (steps " : ", ") + std::to_string(step);
    if (p.slow_steps > static_cast<std::int64_t>(p.slow_step_numbers.size())) numbers += ", ...";
    // The verdict with the one figure it is judged by (the cv and the max are the table's).
    fmt::print(out,
               "  stability: {}, the step period's p90 {}x its median ({} {}x); slow steps (a "
               "period over {:g}x the median): {}{}\n",
               st.unstable ? "UNSTABLE" : "stable", number_text("{:.2f}", st.p90_over_median),
               st.unstable ? "over" : "unstable over",
               number_text("{:.2f}", 1.0 + kUnstableStepSpread), kSlowStepFactor, p.slow_steps,
               numbers + (numbers.empty() ? "" : ")"));
    // The causes are the run's (but the clocks, which have a line of their own): said once.
    if (st.unstable && !causes_said) {
        std::vector<std::string> causes, remedies;
        causes_and_remedies(s, p, causes, remedies);
        fmt::print(out, "    likely: {}\n    to steady it: {}\n", fmt::join(causes, "; "),
                   fmt::join(remedies, "; "));
        causes_said = true;
    }
    print_clocks(out, s, p);
}

std::string placement_text(const RankInfo& rank) {
    if (rank.cores.empty()) return "";
    const bool one_node = rank.core_numa.find_first_of(",-") == std::string::npos;
    std::string text = "cores " + rank.cores;
    if (!rank.core_numa.empty())
        text += fmt::format(" (NUMA node{} {})", one_node ? "" : "s", rank.core_numa);
    if (!rank.gpu_numa.empty()) text += ", its GPU on NUMA node " + rank.gpu_numa;
    if (away_from_gpu(rank)) text += ": WARNING, not the GPU's node";
    return text;
}

void print_placement_notes(std::FILE* out, const RunSummary& s) {
    // Each kind of warning once, whatever the number of GPUs or ranks it concerns.
    if (const std::vector<SharedGpu> gpus = time_sliced_gpus(s); !gpus.empty()) {
        fmt::print(out,
                   "note: {} without MPS: the figures measure the driver switching between the "
                   "{}processes that share {}, not the link; run under MPS: scripts/with-mps "
                   "mpirun ...\n",
                   shared_gpus_text(gpus),
                   gpus.size() == 1 ? std::to_string(gpus.front().ranks.size()) + " " : "",
                   gpus.size() == 1 ? "it" : "each");
    }
    if (const std::vector<int> away = ranks_away_from_gpu(s); !away.empty()) {
        fmt::print(out, "note: {}: {} copies cross the socket link; bind {} near {} GPU ({})\n",
                   away_text(s, away), away.size() == 1 ? "its" : "their",
                   away.size() == 1 ? "it" : "them", away.size() == 1 ? "its" : "their",
                   binding_command(s));
    }
    // Bound to one core each (mpirun's default for 2 ranks), a staged MPI rank's three threads
    // take turns (docs/PERFORMANCE.md: "A core for each working thread").
    if (const CrowdedRanks crowded = crowded_ranks(s); !crowded.ranks.empty()) {
        fmt::print(out,
                   "note: {} (main thread and host streams): they take turns, and the "
                   "steps wait for them; give each rank a core per thread ({})\n",
                   crowded_text(crowded), binding_command(s));
    }
}

}  // namespace gpurelay
