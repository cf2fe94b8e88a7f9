#include "report/report.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "comm/mpi_error.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

PhaseStats stats_of(std::vector<double> values) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
        values.end());
    if (values.empty()) return {kNaN, kNaN, kNaN};
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    return {median, values.front(), values.back()};
}

// What summarize_pass sums over the ranks, by name.
struct Counts {
    std::uint64_t x_mismatches, c_mismatches, spot_checked, spot_mismatches;
};
// What it takes the largest of over the ranks: the slowest rank's wall times.
struct Walls {
    double timed_wall_ms, cold_step_ms, write_wait_ms, capture_ms, graphs_captured;
    double host_queue_ms, host_retire_ms, host_callback_ms;
};

// One all-reduce of every field of `fields`, a struct of nothing but `Field`s.
template <typename Field, typename Fields>
Fields reduce_fields(const Fields& fields, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    static_assert(std::is_trivially_copyable_v<Fields> && sizeof(Fields) % sizeof(Field) == 0);
    Fields reduced{};
    MPI_CHECK(MPI_Allreduce(&fields, &reduced, static_cast<int>(sizeof(Fields) / sizeof(Field)),
                            type, op, comm));
    return reduced;
}

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : kNaN; }

std::string fmt(const char* format, double value) {
    if (std::isnan(value)) return "-";
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    char text[64];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return text;
}

const char* pass_name(bool overlap) { return overlap ? "overlap=on" : "overlap=off"; }

// Why auto chose the pass's timing: " (auto: warm-up steps took 0.046 ms each, under 0.25 ms)".
std::string timing_reason(const PassSummary& p) {
    if (!p.timing_auto) return "";
    if (std::isnan(p.timing_judged_ms)) return " (auto: no warm-up step to judge from)";
    std::string reason = " (auto: warm-up steps took ";
    reason += fmt("%.3f", p.timing_judged_ms);
    reason += p.timing == "phases" ? " ms each, not under " : " ms each, under ";
    reason += fmt("%g", kTimingAutoBelowMs);
    reason += " ms)";
    return reason;
}

std::string one_line_config(const Config& config) {
    std::string line;
    for (const auto& key : config_keys()) {
        if (!line.empty()) line += ' ';
        line += std::string(key.name) + '=' + config_value_toml(config, key.name);
    }
    return line;
}

}  // namespace

bool RunSummary::verified() const {
    return std::all_of(passes.begin(), passes.end(),
                       [](const PassSummary& p) { return p.verified(); });
}

VerificationTotals RunSummary::verification_totals() const {
    VerificationTotals t;
    for (const PassSummary& p : passes) {
        t.x_checked += p.x_checked;
        t.x_mismatches += p.x_mismatches;
        t.c_checked += p.c_checked;
        t.c_mismatches += p.c_mismatches;
        t.spot_checked += p.spot_checked;
        t.spot_mismatches += p.spot_mismatches;
    }
    return t;
}

PassSummary summarize_pass(MPI_Comm comm, const Config& config, const PairPlacement& placement,
                           const PassResult& result) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const auto steps = static_cast<std::size_t>(config.steps);
    // The steps this pass timed: after warm-up (and after the cold first step of a resumed
    // pass), up to where it stopped.
    const auto warmup = static_cast<std::size_t>(result.timed_from);
    const auto end = static_cast<std::size_t>(result.end_step);
    const std::size_t timed = end > warmup ? end - warmup : 0;
    const double bytes = static_cast<double>(config.tensor_bytes());

    PassSummary summary;
    summary.overlap = result.overlap;
    summary.timed_steps = static_cast<std::int64_t>(timed);
    summary.timed_from = result.timed_from;

    // Every rank's step times to rank 0: steps x phases doubles each.
    std::vector<double> mine(steps * kPhaseCount);
    for (std::size_t s = 0; s < steps; ++s) {
        for (std::size_t p = 0; p < kPhaseCount; ++p)
            mine[s * kPhaseCount + p] = result.steps[s].*kPhases[p].member;
    }
    std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
    MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                         static_cast<int>(mine.size()), MPI_DOUBLE, 0, comm));

    // Verification totals and the worst wall times, on every rank.
    Counts counts{0, 0, result.spot_checked, result.spot_mismatches};
    if (placement.role != Role::producer) {
        for (std::size_t s = 0; s < steps; ++s) {
            counts.x_mismatches += result.x_mismatches[s];
            counts.c_mismatches += result.c_mismatches[s];
        }
    }
    const Counts totals = reduce_fields<std::uint64_t>(counts, MPI_UINT64_T, MPI_SUM, comm);
    const Walls worst = reduce_fields<double>(
        Walls{result.timed_wall_ms, result.cold_step_ms, result.write_wait_ms, result.capture_ms,
              static_cast<double>(result.graphs_captured), result.host_queue_ms,
              result.host_retire_ms, result.host_callback_ms},
        MPI_DOUBLE, MPI_MAX, comm);

    const auto ran = static_cast<std::uint64_t>(result.end_step - result.first_step);
    summary.x_checked = config.elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.c_checked = config.c_elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.x_mismatches = totals.x_mismatches;
    summary.c_mismatches = totals.c_mismatches;
    summary.spot_checked = totals.spot_checked;
    summary.spot_mismatches = totals.spot_mismatches;
    summary.time_per_step_ms = timed > 0 ? worst.timed_wall_ms / static_cast<double>(timed) : kNaN;
    summary.steps_per_s = 1000.0 / summary.time_per_step_ms;
    summary.cold_step_ms = worst.cold_step_ms;
    summary.write_wait_ms = worst.write_wait_ms;
    summary.capture_ms = worst.capture_ms;
    summary.graphs_captured = static_cast<int>(worst.graphs_captured);
    summary.graph_steps = result.graph_steps;  // every rank replays the same steps
    summary.timing = std::string(to_string(result.timing));
    if (result.timing == Timing::sampled) {
        summary.timing += ':';
        summary.timing += std::to_string(result.timing_every);
    }
    summary.timing_auto = config.timing == Timing::auto_select;
    summary.timing_judged_ms = result.timing_judged_ms;
    summary.phase_timed_steps = result.phase_timed_steps;  // every rank times the same steps
    const double per_step_us = timed > 0 ? 1000.0 / static_cast<double>(timed) : kNaN;
    summary.host_queue_us = worst.host_queue_ms * per_step_us;
    summary.host_retire_us = worst.host_retire_ms * per_step_us;
    summary.host_callback_us = worst.host_callback_ms * per_step_us;
    if (rank != 0) return summary;

    auto value = [&](int r, std::size_t s, Phase p) {
        return all[(static_cast<std::size_t>(r) * steps + s) * kPhaseCount + index_of(p)];
    };
    for (const PhaseInfo& phase : kPhases) {
        std::vector<double> samples;
        for (int r = 0; r < size; ++r) {
            for (std::size_t s = warmup; s < end; ++s) samples.push_back(value(r, s, phase.phase));
        }
        summary.phases[index_of(phase.phase)] = stats_of(std::move(samples));
    }
    // A transfer's time, seen from either end, also holds waiting for the other end (the sender
    // for a receiver still busy; the receiver for a sender whose A ran late): the shorter of the
    // two is the closer measure of the transfer itself.
    std::vector<double> all_transfers;
    const bool split = config.pairing == Pairing::split;
    // A collective's time, seen from each rank of its group, also holds waiting for the last one
    // to arrive: the shortest is the closest measure of the collective itself, as the shorter end
    // is for a pair. A broadcast's root times it as its send, the others as their receive.
    const int n = placement.group_size;
    for (int g = 0; config.pattern != Pattern::pairs && g < placement.groups; ++g) {
        std::vector<double> transfers, periods;
        for (std::size_t s = warmup; s < end; ++s) {
            double shortest = kNaN;
            for (int r = g * n; r < (g + 1) * n; ++r) {
                const bool root_sends = config.pattern == Pattern::broadcast && n > 1 && r == g * n;
                shortest = std::fmin(shortest, value(r, s, root_sends ? Phase::send : Phase::recv));
            }
            transfers.push_back(shortest);
            periods.push_back(value((g + 1) * n - 1, s, Phase::step));
        }
        all_transfers.insert(all_transfers.end(), transfers.begin(), transfers.end());
        const double transfer_ms = stats_of(transfers).median;
        summary.pairs.push_back({g, g * n, (g + 1) * n - 1, stats_of(periods).median, transfer_ms,
                                 gbps(bytes, transfer_ms)});
    }
    for (int pair = 0; config.pattern == Pattern::pairs && pair < placement.pairs; ++pair) {
        const PairPlacement p = place_pairs(size == 1 ? 0 : (split ? pair : 2 * pair), size, split);
        std::vector<double> transfers, periods;
        for (std::size_t s = warmup; s < end; ++s) {
            transfers.push_back(
                std::min(value(p.producer, s, Phase::send), value(p.consumer, s, Phase::recv)));
            periods.push_back(value(p.consumer, s, Phase::step));
        }
        all_transfers.insert(all_transfers.end(), transfers.begin(), transfers.end());
        const double transfer_ms = stats_of(transfers).median;
        summary.pairs.push_back({pair, p.producer, p.consumer, stats_of(periods).median,
                                 transfer_ms, gbps(bytes, transfer_ms)});
    }
    summary.transfer_ms = stats_of(all_transfers).median;
    summary.transfer_gbps = gbps(bytes, summary.transfer_ms);
    summary.bus_gbps = summary.transfer_gbps * bus_factor(config.pattern, n);
    summary.aggregate_gbps = gbps(bytes * placement.pairs, summary.time_per_step_ms);
    summary.a_gbps = gbps(bytes, summary.phase(Phase::a).median);
    summary.b_gbps = gbps(2 * bytes, summary.phase(Phase::b).median);
    const double c_ms = summary.phase(Phase::c).median;
    summary.step_bound_ms = step_bound_ms(phase_medians(summary), config.depth, result.overlap);
    summary.c_giter_per_s = c_ms > 0 ? static_cast<double>(config.c_elements) *
                                           static_cast<double>(config.c_iterations) / (c_ms * 1e6)
                                     : kNaN;
    return summary;
}

double bus_factor(Pattern pattern, int group_size) {
    if (pattern != Pattern::allreduce) return 1.0;
    return 2.0 * (group_size - 1) / group_size;
}

PhaseMedians phase_medians(const PassSummary& pass) {
    return {pass.phase(Phase::a).median, pass.transfer_ms, pass.phase(Phase::c).median,
            pass.phase(Phase::b).median};
}

std::vector<RankInfo> gather_rank_info(MPI_Comm comm, const RankInfo& mine) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // One fixed-width record per rank keeps this to a single gather.
    constexpr int kField = 128;
    constexpr int kFields = 5;
    std::string record(kFields * kField, '\0');
    const std::string fields[kFields] = {mine.host, mine.device, mine.bus_id, mine.role,
                                         mine.peer_link};
    for (int f = 0; f < kFields; ++f) {
        record.replace(static_cast<std::size_t>(f * kField),
                       std::min<std::size_t>(fields[f].size(), kField - 1),
                       fields[f].substr(0, kField - 1));
    }
    record.resize(kFields * kField);
    std::vector<char> all(rank == 0 ? record.size() * static_cast<std::size_t>(size) : 0);
    std::vector<int> pairs(rank == 0 ? static_cast<std::size_t>(size) : 0);
    MPI_CHECK(MPI_Gather(record.data(), kFields * kField, MPI_CHAR, all.data(), kFields * kField,
                         MPI_CHAR, 0, comm));
    MPI_CHECK(MPI_Gather(&mine.pair, 1, MPI_INT, pairs.data(), 1, MPI_INT, 0, comm));
    std::vector<RankInfo> ranks;
    for (int r = 0; rank == 0 && r < size; ++r) {
        RankInfo info;
        std::string* out[kFields] = {&info.host, &info.device, &info.bus_id, &info.role,
                                     &info.peer_link};
        for (int f = 0; f < kFields; ++f) {
            *out[f] = std::string(all.data() + (r * kFields + f) * kField);
        }
        info.pair = pairs[static_cast<std::size_t>(r)];
        ranks.push_back(info);
    }
    return ranks;
}

void summarize_run(MPI_Comm comm, const RankFigures& mine, RunSummary& summary) {
    summary.ranks = gather_rank_info(comm, mine.info);
    if (summary.passes.size() == 2) {
        summary.overlap_speedup =
            summary.passes[0].time_per_step_ms / summary.passes[1].time_per_step_ms;
        summary.overlap_ideal_ms =
            step_bound_ms(phase_medians(summary.passes[0]), summary.config.depth, /*overlap=*/true);
    }
    struct Memory {
        std::uint64_t device_bytes, host_bytes;
    };
    const Memory largest = reduce_fields<std::uint64_t>(Memory{mine.device_bytes, mine.host_bytes},
                                                        MPI_UINT64_T, MPI_MAX, comm);
    summary.device_bytes = largest.device_bytes;
    summary.host_bytes = largest.host_bytes;
    struct Writes {
        double bytes, seconds;
    };
    const Writes total = reduce_fields<double>(Writes{mine.bytes_written, mine.write_seconds},
                                               MPI_DOUBLE, MPI_SUM, comm);
    summary.write_gbps = total.seconds > 0 ? total.bytes / total.seconds / 1e9 : 0.0;
}

void print_report(std::FILE* out, const RunSummary& s) {
    const Config& c = s.config;
    const std::string layout = c.pattern == Pattern::pairs
                                   ? std::to_string(s.pairs) + " pair(s)"
                                   : std::string(to_string(c.pattern)) + " in " +
                                         std::to_string(s.groups) + " group(s) of " +
                                         std::to_string(s.group_size);
    std::fprintf(out, "gpurelay: %d rank(s), %s, %s path, transport %s%s%s\n", s.world_size,
                 layout.c_str(), s.backend.c_str(), s.transport.c_str(),
                 s.transport_note.empty() ? "" : (" (" + s.transport_note + ")").c_str(),
                 c.graphs ? ", graphs on" : "");
    std::fprintf(out, "config: %s\n", one_line_config(c).c_str());
    std::fprintf(out, "versions: %s\n", s.versions.c_str());
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& info = s.ranks[r];
        // For a collective, `pair` is the rank's row of /y (receivers, or every rank).
        std::fprintf(out, "rank %zu: %s %d %s on %s, %s%s%s; to its peer: %s\n", r,
                     c.pattern == Pattern::pairs ? "pair" : "row", info.pair, info.role.c_str(),
                     info.host.c_str(), info.device.c_str(), info.bus_id.empty() ? "" : " ",
                     info.bus_id.c_str(), info.peer_link.c_str());
    }
    std::fprintf(
        out, "memory per rank (largest): device %s (%lld slots of %s and C's %s), host %s\n",
        human_bytes(static_cast<double>(s.device_bytes)).c_str(), static_cast<long long>(c.depth),
        human_bytes(static_cast<double>(c.tensor_bytes())).c_str(),
        human_bytes(static_cast<double>(c.c_elements * 4)).c_str(),
        human_bytes(static_cast<double>(s.host_bytes)).c_str());
    for (const PassSummary& p : s.passes) {
        std::fprintf(out,
                     "\n%s: %lld timed steps from step %lld (ms; step = period between "
                     "completed steps)\n",
                     pass_name(p.overlap), static_cast<long long>(p.timed_steps),
                     static_cast<long long>(p.timed_from));
        std::fprintf(out, "  %-6s %11s %11s %11s\n", "phase", "median", "min", "max");
        for (const PhaseInfo& phase : kPhases) {
            const PhaseStats& st = p.phase(phase.phase);
            std::fprintf(out, "  %-6s %11s %11s %11s\n", phase.name, fmt("%.4f", st.median).c_str(),
                         fmt("%.4f", st.min).c_str(), fmt("%.4f", st.max).c_str());
        }
        std::fprintf(out, "  transfer %s ms = %s GB/s; A %s GB/s; B %s GB/s; C %s Giter/s\n",
                     fmt("%.4f", p.transfer_ms).c_str(), fmt("%.2f", p.transfer_gbps).c_str(),
                     fmt("%.1f", p.a_gbps).c_str(), fmt("%.1f", p.b_gbps).c_str(),
                     fmt("%.2f", p.c_giter_per_s).c_str());
        if (c.pattern != Pattern::pairs) {
            std::fprintf(out,
                         "  %s (nccl-tests' conventions): algbw %s GB/s (bytes / time), busbw %s "
                         "GB/s (algbw x %s)\n",
                         std::string(to_string(c.pattern)).c_str(),
                         fmt("%.2f", p.transfer_gbps).c_str(), fmt("%.2f", p.bus_gbps).c_str(),
                         fmt("%.3f", bus_factor(c.pattern, s.group_size)).c_str());
        }
        std::fprintf(
            out, "  time per step %s ms (%s steps/s, aggregate %s GB/s); cold first step %s ms\n",
            fmt("%.4f", p.time_per_step_ms).c_str(), fmt("%.1f", p.steps_per_s).c_str(),
            fmt("%.2f", p.aggregate_gbps).c_str(), fmt("%.3f", p.cold_step_ms).c_str());
        std::fprintf(
            out,
            "  host per step (the longest rank for each): queueing %s µs, reading back %s µs "
            "(waits for the GPU), stop vote %s µs (waits for the other ranks)\n",
            fmt("%.1f", p.host_queue_us).c_str(), fmt("%.1f", p.host_retire_us).c_str(),
            fmt("%.1f", p.host_callback_us).c_str());
        std::fprintf(out, "  timing %s%s; %lld of %lld timed steps carry phase times\n",
                     p.timing.c_str(), timing_reason(p).c_str(),
                     static_cast<long long>(p.phase_timed_steps),
                     static_cast<long long>(p.timed_steps));
        std::fprintf(out, "  step bound %s ms = %s of the medians; time per step %sx that\n",
                     fmt("%.4f", p.step_bound_ms).c_str(),
                     step_bound_formula(c.depth, p.overlap).c_str(),
                     fmt("%.2f", p.time_per_step_ms / p.step_bound_ms).c_str());
        if (c.graphs) {
            std::fprintf(out,
                         "  graphs: %d captured in %.1f ms (after the cold step, untimed), %lld "
                         "steps replayed\n",
                         p.graphs_captured, p.capture_ms, static_cast<long long>(p.graph_steps));
        }
        if (p.pairs.size() > 1) {
            for (const PairFigures& f : p.pairs) {
                std::fprintf(out, "  %s %d (rank %d %s %d): step %s ms, transfer %s ms = %s GB/s\n",
                             c.pattern == Pattern::pairs ? "pair" : "group", f.pair, f.producer,
                             c.pattern == Pattern::pairs ? "->" : "to", f.consumer,
                             fmt("%.4f", f.step_ms).c_str(), fmt("%.4f", f.transfer_ms).c_str(),
                             fmt("%.2f", f.transfer_gbps).c_str());
            }
        }
    }
    if (s.overlap_speedup > 0) {
        std::fprintf(out,
                     "\noverlap speedup: %.3fx (time per step %s ms without overlap, %s ms with)\n",
                     s.overlap_speedup, fmt("%.4f", s.passes.front().time_per_step_ms).c_str(),
                     fmt("%.4f", s.passes.back().time_per_step_ms).c_str());
        std::fprintf(out,
                     "  perfect overlap: %s ms per step = %s of the overlap=off medians; "
                     "overlapped step %sx that\n",
                     fmt("%.4f", s.overlap_ideal_ms).c_str(),
                     step_bound_formula(c.depth, true).c_str(),
                     fmt("%.2f", s.passes.back().time_per_step_ms / s.overlap_ideal_ms).c_str());
        if (s.speedup_includes_io()) {
            std::fprintf(out,
                         "  note: only the overlap-on pass writes /y, and it waited %.1f ms on the "
                         "file writer, so this speedup includes I/O; compare with --write last "
                         "or none\n",
                         s.passes.back().write_wait_ms);
        }
    }
    const PassSummary& m = s.main_pass();
    const VerificationTotals v = s.verification_totals();
    std::fprintf(out,
                 "verification: x %llu elements checked, %llu wrong; C %llu checked, %llu wrong; "
                 "host spot check %llu samples, %llu wrong: %s\n",
                 static_cast<unsigned long long>(v.x_checked),
                 static_cast<unsigned long long>(v.x_mismatches),
                 static_cast<unsigned long long>(v.c_checked),
                 static_cast<unsigned long long>(v.c_mismatches),
                 static_cast<unsigned long long>(v.spot_checked),
                 static_cast<unsigned long long>(v.spot_mismatches),
                 s.verified() ? "PASSED" : "FAILED");
    std::fprintf(out, "output: %s (write %s GB/s; the pipeline waited %s ms on the writer)\n",
                 c.output.c_str(), fmt("%.2f", s.write_gbps).c_str(),
                 fmt("%.1f", m.write_wait_ms).c_str());
    std::fflush(out);
}

namespace {

nlohmann::json pass_json(const PassSummary& p) {
    nlohmann::json j;
    j["overlap"] = p.overlap;
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        j["phases_ms"][phase.name] = {{"median", st.median}, {"min", st.min}, {"max", st.max}};
    }
    j["transfer_ms"] = p.transfer_ms;
    j["transfer_gbps"] = p.transfer_gbps;
    j["algbw_gbps"] = p.transfer_gbps;
    j["busbw_gbps"] = p.bus_gbps;
    j["aggregate_gbps"] = p.aggregate_gbps;
    j["a_gbps"] = p.a_gbps;
    j["b_gbps"] = p.b_gbps;
    j["c_giter_per_s"] = p.c_giter_per_s;
    j["time_per_step_ms"] = p.time_per_step_ms;
    j["steps_per_s"] = p.steps_per_s;
    j["cold_step_ms"] = p.cold_step_ms;
    j["write_wait_ms"] = p.write_wait_ms;
    j["step_bound_ms"] = p.step_bound_ms;
    j["host_us_per_step"] = {
        {"queue", p.host_queue_us}, {"retire", p.host_retire_us}, {"callback", p.host_callback_us}};
    j["timing"] = {{"used", p.timing},
                   {"auto", p.timing_auto},
                   {"judged_from_ms", p.timing_judged_ms},
                   {"phase_timed_steps", p.phase_timed_steps}};
    j["graphs"] = {{"captured", p.graphs_captured},
                   {"capture_ms", p.capture_ms},
                   {"steps_replayed", p.graph_steps}};
    j["verification"] = {{"x_checked", p.x_checked},       {"x_mismatches", p.x_mismatches},
                         {"c_checked", p.c_checked},       {"c_mismatches", p.c_mismatches},
                         {"spot_checked", p.spot_checked}, {"spot_mismatches", p.spot_mismatches},
                         {"passed", p.verified()}};
    for (const PairFigures& f : p.pairs) {
        j["pairs"].push_back({{"pair", f.pair},
                              {"producer", f.producer},
                              {"consumer", f.consumer},
                              {"step_ms", f.step_ms},
                              {"transfer_ms", f.transfer_ms},
                              {"transfer_gbps", f.transfer_gbps}});
    }
    return j;
}

// NaN is not JSON: write null.
nlohmann::json without_nan(const nlohmann::json& j) {
    if (j.is_number_float() && std::isnan(j.get<double>())) return nullptr;
    if (j.is_object() || j.is_array()) {
        nlohmann::json copy = j;
        for (auto& item : copy) item = without_nan(item);
        return copy;
    }
    return j;
}

std::string csv_number(double v, const char* format = "%.6g") {
    return std::isnan(v) || v == 0.0 ? (v == 0.0 ? "0" : "") : fmt(format, v);
}

std::string csv_text(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

// A deck value as JSON of its own type: the TOML literal (2, 2.0, true, "auto") is also JSON for
// every key gpurelay has; anything else stays the literal's text.
nlohmann::json typed_value(const std::string& toml_literal) {
    nlohmann::json value = nlohmann::json::parse(toml_literal, nullptr, /*allow_exceptions=*/false);
    return value.is_discarded() ? nlohmann::json(toml_literal) : value;
}

}  // namespace

std::string summary_json(const RunSummary& s) {
    nlohmann::json j;
    j["schema_version"] = kSummarySchemaVersion;
    j["gpurelay_version"] = s.versions;
    j["git_hash"] = s.git_hash;
    j["timestamp"] = s.timestamp;
    j["world_size"] = s.world_size;
    j["pairs"] = s.pairs;
    j["pattern"] = std::string(to_string(s.config.pattern));
    if (s.config.pattern != Pattern::pairs) {
        j["groups"] = s.groups;
        j["group_size"] = s.group_size;
        j["bus_factor"] = bus_factor(s.config.pattern, s.group_size);
    }
    j["backend"] = s.backend;
    j["transport"] = s.transport;
    j["transport_note"] = s.transport_note;
    for (const auto& key : config_keys()) {
        j["config"][std::string(key.name)] = typed_value(config_value_toml(s.config, key.name));
    }
    j["config_toml"] = config_to_toml(s.config);
    for (const RankInfo& r : s.ranks) {
        j["ranks"].push_back({{"host", r.host},
                              {"device", r.device},
                              {"bus_id", r.bus_id},
                              {"role", r.role},
                              {"pair", r.pair},
                              {"peer_link", r.peer_link}});
    }
    for (const PassSummary& p : s.passes) j["passes"].push_back(pass_json(p));
    if (s.overlap_speedup > 0) {
        j["overlap_speedup"] = s.overlap_speedup;
        j["overlap_speedup_includes_io"] = s.speedup_includes_io();
        j["overlap_ideal_ms"] = s.overlap_ideal_ms;
    }
    j["device_bytes"] = s.device_bytes;
    j["host_bytes"] = s.host_bytes;
    j["write_gbps"] = s.write_gbps;
    j["verified"] = s.verified();
    return without_nan(j).dump(2) + "\n";
}

namespace {

std::string csv_bool(bool value) { return value ? "true" : "false"; }
bool compared(const RunSummary& r) { return r.overlap_speedup > 0; }

// The columns in file order; the phase medians come from kPhases (the step's period has its
// median, min and max earlier, as step_ms_*).
std::vector<CsvColumn> make_results_csv_columns() {
    using R = const RunSummary&;
    std::vector<CsvColumn> columns = {
        {"tag", [](R r) { return csv_text(r.config.tag); }},
        {"timestamp", [](R r) { return r.timestamp; }},
        {"git_hash", [](R r) { return r.git_hash; }},
        {"world_size", [](R r) { return std::to_string(r.world_size); }},
        {"pairs", [](R r) { return std::to_string(r.pairs); }},
        {"backend", [](R r) { return r.backend; }},
        {"transport", [](R r) { return r.transport.substr(0, r.transport.find(' ')); }},
        {"gpu_name", [](R r) { return csv_text(r.ranks.empty() ? "" : r.ranks.front().device); }},
        {"dtype", [](R r) { return std::string(to_string(r.config.dtype)); }},
        {"elements", [](R r) { return std::to_string(r.config.elements); }},
        {"tensor_bytes", [](R r) { return std::to_string(r.config.tensor_bytes()); }},
        {"steps", [](R r) { return std::to_string(r.config.steps); }},
        {"warmup", [](R r) { return std::to_string(r.config.warmup); }},
        {"depth", [](R r) { return std::to_string(r.config.depth); }},
        {"overlap", [](R r) { return std::string(to_string(r.config.overlap)); }},
        {"blocking", [](R r) { return csv_bool(r.config.blocking); }},
        {"graphs", [](R r) { return csv_bool(r.config.graphs); }},
        {"c_elements", [](R r) { return std::to_string(r.config.c_elements); }},
        {"c_iterations", [](R r) { return std::to_string(r.config.c_iterations); }},
        {"pairing", [](R r) { return std::string(to_string(r.config.pairing)); }},
        {"chunk", [](R r) { return std::to_string(r.config.chunk); }},
        {"time_per_step_ms", [](R r) { return csv_number(r.main_pass().time_per_step_ms); }},
        {"step_ms_median", [](R r) { return csv_number(r.main_pass().phase(Phase::step).median); }},
        {"step_ms_min", [](R r) { return csv_number(r.main_pass().phase(Phase::step).min); }},
        {"step_ms_max", [](R r) { return csv_number(r.main_pass().phase(Phase::step).max); }},
        {"steps_per_s", [](R r) { return csv_number(r.main_pass().steps_per_s); }},
    };
    for (const PhaseInfo& phase : kPhases) {
        if (phase.phase == Phase::step) continue;  // its period: step_ms_* above
        columns.push_back({std::string(phase.name) + "_ms", [p = phase.phase](R r) {
                               return csv_number(r.main_pass().phase(p).median);
                           }});
    }
    const std::vector<CsvColumn> rest = {
        {"transfer_gbps", [](R r) { return csv_number(r.main_pass().transfer_gbps); }},
        {"aggregate_gbps", [](R r) { return csv_number(r.main_pass().aggregate_gbps); }},
        {"a_gbps", [](R r) { return csv_number(r.main_pass().a_gbps); }},
        {"b_gbps", [](R r) { return csv_number(r.main_pass().b_gbps); }},
        {"cold_step_ms", [](R r) { return csv_number(r.passes.front().cold_step_ms); }},
        {"time_per_step_no_overlap_ms",
         [](R r) { return compared(r) ? csv_number(r.passes.front().time_per_step_ms) : ""; }},
        {"overlap_speedup", [](R r) { return compared(r) ? csv_number(r.overlap_speedup) : ""; }},
        {"x_checked", [](R r) { return std::to_string(r.verification_totals().x_checked); }},
        {"x_mismatches", [](R r) { return std::to_string(r.verification_totals().x_mismatches); }},
        {"c_mismatches", [](R r) { return std::to_string(r.verification_totals().c_mismatches); }},
        {"verified", [](R r) { return std::string(r.verified() ? "ok" : "failed"); }},
        {"step_bound_ms", [](R r) { return csv_number(r.main_pass().step_bound_ms); }},
        {"overlap_ideal_ms", [](R r) { return compared(r) ? csv_number(r.overlap_ideal_ms) : ""; }},
        {"pattern", [](R r) { return std::string(to_string(r.config.pattern)); }},
        {"group_size", [](R r) { return std::to_string(r.group_size); }},
        {"algbw_gbps", [](R r) { return csv_number(r.main_pass().transfer_gbps); }},
        {"busbw_gbps", [](R r) { return csv_number(r.main_pass().bus_gbps); }},
    };
    columns.insert(columns.end(), rest.begin(), rest.end());
    return columns;
}

}  // namespace

const std::vector<CsvColumn>& results_csv_columns() {
    static const std::vector<CsvColumn> columns = make_results_csv_columns();
    return columns;
}

std::string results_csv_header() {
    std::string header;
    for (const CsvColumn& column : results_csv_columns()) {
        if (!header.empty()) header += ',';
        header += column.name;
    }
    return header;
}

std::string results_csv_row(const RunSummary& run) {
    std::string line;
    // Joined by position, not by whether the line is still empty: the tag (first) may be empty.
    for (const CsvColumn& column : results_csv_columns()) {
        if (&column != &results_csv_columns().front()) line += ',';
        line += column.cell(run);
    }
    return line;
}

namespace {

// The first line of the file open as `fd` (read from its start), or "" if it is empty.
std::string first_line(int fd) {
    std::string line;
    char ch = 0;
    for (off_t at = 0; ::pread(fd, &ch, 1, at) == 1 && ch != '\n'; ++at) line += ch;
    return line;
}

std::string header_mismatch(const std::string& path) {
    return "results_csv: '" + path +
           "' has other columns (written by another gpurelay version?); appending would put "
           "values under the wrong names: use a new file";
}

}  // namespace

void check_results_csv_header(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;  // not there yet (the folder was checked)
    const std::string found = first_line(fd);
    ::close(fd);
    if (!found.empty() && found != results_csv_header()) {
        throw usage_error(header_mismatch(path));
    }
}

namespace {

// Writes all of `text` to `fd` (a write may take only part of it); false with errno set if the
// file system refused the rest (a full disk, a quota).
bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

void append_results_csv(const std::string& path, const RunSummary& s) {
    const std::string line = results_csv_row(s);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        throw runtime_error("cannot open results CSV '" + path + "': " + std::strerror(errno));
    // The lock makes "is it empty? then write the header" and the append one step.
    ::flock(fd, LOCK_EX);
    const off_t before = ::lseek(fd, 0, SEEK_END);
    std::string text;
    if (before == 0) {
        text = results_csv_header() + "\n";
    } else if (first_line(fd) != results_csv_header()) {
        ::flock(fd, LOCK_UN);
        ::close(fd);
        throw runtime_error(header_mismatch(path));
    }
    text += line + "\n";
    const bool written = write_all(fd, text) && ::fsync(fd) == 0;
    const int error = errno;
    // A row that did not fit is taken back: the file keeps only whole rows.
    if (!written && ::ftruncate(fd, before) != 0) {
        std::fprintf(stderr, "gpurelay: could not take back the partial row at the end of '%s'\n",
                     path.c_str());
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (!written) {
        throw runtime_error("cannot append to results CSV '" + path + "': " + std::strerror(error) +
                            " (the file is as it was)");
    }
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string temporary = path + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        throw runtime_error("cannot create '" + temporary + "': " + std::strerror(errno));
    }
    bool written = write_all(fd, text) && ::fsync(fd) == 0;
    int error = errno;
    if (::close(fd) != 0 && written) {
        written = false;
        error = errno;
    }
    if (written && std::rename(temporary.c_str(), path.c_str()) == 0) return;
    if (written) error = errno;
    ::unlink(temporary.c_str());  // nothing half-written is left beside `path`
    throw runtime_error("cannot write '" + path + "': " + std::strerror(error) +
                        (written ? " (renaming its temporary file)" : ""));
}

}  // namespace gpurelay
