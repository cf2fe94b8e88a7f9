#include "report/report.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

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
        for (int p = 0; p < kPhaseCount; ++p)
            mine[s * kPhaseCount + static_cast<std::size_t>(p)] = phase_value(result.steps[s], p);
    }
    std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
    MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                         static_cast<int>(mine.size()), MPI_DOUBLE, 0, comm));

    // Verification totals and the worst wall times, on every rank.
    std::uint64_t counts[4] = {0, 0, result.spot_checked, result.spot_mismatches};
    if (placement.role != Role::producer) {
        for (std::size_t s = 0; s < steps; ++s) {
            counts[0] += result.x_mismatches[s];
            counts[1] += result.c_mismatches[s];
        }
    }
    std::uint64_t totals[4];
    MPI_CHECK(MPI_Allreduce(counts, totals, 4, MPI_UINT64_T, MPI_SUM, comm));
    double walls[8] = {result.timed_wall_ms,
                       result.cold_step_ms,
                       result.write_wait_ms,
                       result.capture_ms,
                       static_cast<double>(result.graphs_captured),
                       result.host_queue_ms,
                       result.host_retire_ms,
                       result.host_callback_ms};
    double worst[8];
    MPI_CHECK(MPI_Allreduce(walls, worst, 8, MPI_DOUBLE, MPI_MAX, comm));

    const auto ran = static_cast<std::uint64_t>(result.end_step - result.first_step);
    summary.x_checked = config.elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.c_checked = config.c_elements * ran * static_cast<std::uint64_t>(placement.pairs);
    summary.x_mismatches = totals[0];
    summary.c_mismatches = totals[1];
    summary.spot_checked = totals[2];
    summary.spot_mismatches = totals[3];
    summary.time_per_step_ms = timed > 0 ? worst[0] / static_cast<double>(timed) : kNaN;
    summary.steps_per_s = 1000.0 / summary.time_per_step_ms;
    summary.cold_step_ms = worst[1];
    summary.write_wait_ms = worst[2];
    summary.capture_ms = worst[3];
    summary.graphs_captured = static_cast<int>(worst[4]);
    summary.graph_steps = result.graph_steps;  // every rank replays the same steps
    const double per_step_us = timed > 0 ? 1000.0 / static_cast<double>(timed) : kNaN;
    summary.host_queue_us = worst[5] * per_step_us;
    summary.host_retire_us = worst[6] * per_step_us;
    summary.host_callback_us = worst[7] * per_step_us;
    if (rank != 0) return summary;

    auto value = [&](int r, std::size_t s, int p) {
        return all[(static_cast<std::size_t>(r) * steps + s) * kPhaseCount +
                   static_cast<std::size_t>(p)];
    };
    for (int p = 0; p < kPhaseCount; ++p) {
        std::vector<double> samples;
        for (int r = 0; r < size; ++r) {
            for (std::size_t s = warmup; s < end; ++s) samples.push_back(value(r, s, p));
        }
        summary.phases[static_cast<std::size_t>(p)] = stats_of(std::move(samples));
    }
    // A transfer's time, seen from either end, also holds waiting for the other end (the sender
    // for a receiver still busy; the receiver for a sender whose A ran late): the shorter of the
    // two is the closer measure of the transfer itself.
    std::vector<double> all_transfers;
    const bool split = config.pairing == Pairing::split;
    for (int pair = 0; pair < placement.pairs; ++pair) {
        const PairPlacement p = place_pairs(size == 1 ? 0 : (split ? pair : 2 * pair), size, split);
        std::vector<double> transfers, periods;
        for (std::size_t s = warmup; s < end; ++s) {
            transfers.push_back(std::min(value(p.producer, s, 1), value(p.consumer, s, 2)));
            periods.push_back(value(p.consumer, s, 6));
        }
        all_transfers.insert(all_transfers.end(), transfers.begin(), transfers.end());
        const double transfer_ms = stats_of(transfers).median;
        summary.pairs.push_back({pair, p.producer, p.consumer, stats_of(periods).median,
                                 transfer_ms, gbps(bytes, transfer_ms)});
    }
    summary.transfer_ms = stats_of(all_transfers).median;
    summary.transfer_gbps = gbps(bytes, summary.transfer_ms);
    summary.aggregate_gbps = gbps(bytes * placement.pairs, summary.time_per_step_ms);
    summary.a_gbps = gbps(bytes, summary.phases[0].median);
    summary.b_gbps = gbps(2 * bytes, summary.phases[5].median);
    const double c_ms = summary.phases[3].median;
    summary.step_bound_ms = step_bound_ms(phase_medians(summary), config.depth, result.overlap);
    summary.c_giter_per_s = c_ms > 0 ? static_cast<double>(config.c_elements) *
                                           static_cast<double>(config.c_iterations) / (c_ms * 1e6)
                                     : kNaN;
    return summary;
}

PhaseMedians phase_medians(const PassSummary& pass) {
    return {pass.phases[0].median, pass.transfer_ms, pass.phases[3].median, pass.phases[5].median};
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

void print_report(std::FILE* out, const RunSummary& s) {
    const Config& c = s.config;
    std::fprintf(out, "gpurelay: %d rank(s), %d pair(s), %s path, transport %s%s%s\n", s.world_size,
                 s.pairs, s.backend.c_str(), s.transport.c_str(),
                 s.transport_note.empty() ? "" : (" (" + s.transport_note + ")").c_str(),
                 c.graphs ? ", graphs on" : "");
    std::fprintf(out, "config: %s\n", one_line_config(c).c_str());
    std::fprintf(out, "versions: %s\n", s.versions.c_str());
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& info = s.ranks[r];
        std::fprintf(out, "rank %zu: pair %d %s on %s, %s%s%s; to its peer: %s\n", r, info.pair,
                     info.role.c_str(), info.host.c_str(), info.device.c_str(),
                     info.bus_id.empty() ? "" : " ", info.bus_id.c_str(), info.peer_link.c_str());
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
        for (int ph = 0; ph < kPhaseCount; ++ph) {
            const PhaseStats& st = p.phases[static_cast<std::size_t>(ph)];
            std::fprintf(out, "  %-6s %11s %11s %11s\n", phase_names()[ph],
                         fmt("%.4f", st.median).c_str(), fmt("%.4f", st.min).c_str(),
                         fmt("%.4f", st.max).c_str());
        }
        std::fprintf(out, "  transfer %s ms = %s GB/s; A %s GB/s; B %s GB/s; C %s Giter/s\n",
                     fmt("%.4f", p.transfer_ms).c_str(), fmt("%.2f", p.transfer_gbps).c_str(),
                     fmt("%.1f", p.a_gbps).c_str(), fmt("%.1f", p.b_gbps).c_str(),
                     fmt("%.2f", p.c_giter_per_s).c_str());
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
                std::fprintf(
                    out, "  pair %d (rank %d -> %d): step %s ms, transfer %s ms = %s GB/s\n",
                    f.pair, f.producer, f.consumer, fmt("%.4f", f.step_ms).c_str(),
                    fmt("%.4f", f.transfer_ms).c_str(), fmt("%.2f", f.transfer_gbps).c_str());
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
    std::uint64_t x_bad = 0, c_bad = 0, spot = 0, spot_bad = 0, x_checked = 0, c_checked = 0;
    for (const PassSummary& p : s.passes) {
        x_bad += p.x_mismatches;
        c_bad += p.c_mismatches;
        spot += p.spot_checked;
        spot_bad += p.spot_mismatches;
        x_checked += p.x_checked;
        c_checked += p.c_checked;
    }
    std::fprintf(out,
                 "verification: x %llu elements checked, %llu wrong; C %llu checked, %llu wrong; "
                 "host spot check %llu samples, %llu wrong: %s\n",
                 static_cast<unsigned long long>(x_checked), static_cast<unsigned long long>(x_bad),
                 static_cast<unsigned long long>(c_checked), static_cast<unsigned long long>(c_bad),
                 static_cast<unsigned long long>(spot), static_cast<unsigned long long>(spot_bad),
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
    for (int ph = 0; ph < kPhaseCount; ++ph) {
        const PhaseStats& st = p.phases[static_cast<std::size_t>(ph)];
        j["phases_ms"][phase_names()[ph]] = {
            {"median", st.median}, {"min", st.min}, {"max", st.max}};
    }
    j["transfer_ms"] = p.transfer_ms;
    j["transfer_gbps"] = p.transfer_gbps;
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

}  // namespace

std::string summary_json(const RunSummary& s) {
    nlohmann::json j;
    j["gpurelay_version"] = s.versions;
    j["git_hash"] = s.git_hash;
    j["timestamp"] = s.timestamp;
    j["world_size"] = s.world_size;
    j["pairs"] = s.pairs;
    j["backend"] = s.backend;
    j["transport"] = s.transport;
    j["transport_note"] = s.transport_note;
    for (const auto& key : config_keys()) {
        j["config"][std::string(key.name)] = config_value_toml(s.config, key.name);
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

std::string results_csv_header() {
    return "tag,timestamp,git_hash,world_size,pairs,backend,transport,gpu_name,dtype,elements,"
           "tensor_bytes,steps,warmup,depth,overlap,blocking,graphs,c_elements,c_iterations,"
           "pairing,chunk,time_per_step_ms,step_ms_median,step_ms_min,step_ms_max,steps_per_s,"
           "a_ms,send_ms,recv_ms,c_ms,wait_ms,b_ms,transfer_gbps,aggregate_gbps,a_gbps,b_gbps,"
           "cold_step_ms,time_per_step_no_overlap_ms,overlap_speedup,x_checked,x_mismatches,"
           "c_mismatches,verified,step_bound_ms,overlap_ideal_ms";
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

void append_results_csv(const std::string& path, const RunSummary& s) {
    const Config& c = s.config;
    const PassSummary& m = s.main_pass();
    std::uint64_t x_checked = 0, x_bad = 0, c_bad = 0;
    for (const PassSummary& p : s.passes) {
        x_checked += p.x_checked;
        x_bad += p.x_mismatches;
        c_bad += p.c_mismatches;
    }
    const bool compared = s.overlap_speedup > 0;
    std::vector<std::string> row = {csv_text(c.tag),
                                    s.timestamp,
                                    s.git_hash,
                                    std::to_string(s.world_size),
                                    std::to_string(s.pairs),
                                    s.backend,
                                    s.transport.substr(0, s.transport.find(' ')),
                                    csv_text(s.ranks.empty() ? "" : s.ranks.front().device),
                                    std::string(to_string(c.dtype)),
                                    std::to_string(c.elements),
                                    std::to_string(c.tensor_bytes()),
                                    std::to_string(c.steps),
                                    std::to_string(c.warmup),
                                    std::to_string(c.depth),
                                    std::string(to_string(c.overlap)),
                                    c.blocking ? "true" : "false",
                                    c.graphs ? "true" : "false",
                                    std::to_string(c.c_elements),
                                    std::to_string(c.c_iterations),
                                    std::string(to_string(c.pairing)),
                                    std::to_string(c.chunk),
                                    csv_number(m.time_per_step_ms),
                                    csv_number(m.phases[6].median),
                                    csv_number(m.phases[6].min),
                                    csv_number(m.phases[6].max),
                                    csv_number(m.steps_per_s),
                                    csv_number(m.phases[0].median),
                                    csv_number(m.phases[1].median),
                                    csv_number(m.phases[2].median),
                                    csv_number(m.phases[3].median),
                                    csv_number(m.phases[4].median),
                                    csv_number(m.phases[5].median),
                                    csv_number(m.transfer_gbps),
                                    csv_number(m.aggregate_gbps),
                                    csv_number(m.a_gbps),
                                    csv_number(m.b_gbps),
                                    csv_number(s.passes.front().cold_step_ms),
                                    compared ? csv_number(s.passes.front().time_per_step_ms) : "",
                                    compared ? csv_number(s.overlap_speedup) : "",
                                    std::to_string(x_checked),
                                    std::to_string(x_bad),
                                    std::to_string(c_bad),
                                    s.verified() ? "ok" : "failed",
                                    csv_number(m.step_bound_ms),
                                    compared ? csv_number(s.overlap_ideal_ms) : ""};
    std::string line;
    // Joined by position, not by whether the line is still empty: the tag (first) may be empty.
    for (std::size_t i = 0; i < row.size(); ++i) line += (i == 0 ? "" : ",") + row[i];

    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        throw runtime_error("cannot open results CSV '" + path + "': " + std::strerror(errno));
    // The lock makes "is it empty? then write the header" and the append one step.
    ::flock(fd, LOCK_EX);
    std::string text;
    if (::lseek(fd, 0, SEEK_END) == 0) {
        text = results_csv_header() + "\n";
    } else if (first_line(fd) != results_csv_header()) {
        ::flock(fd, LOCK_UN);
        ::close(fd);
        throw runtime_error(header_mismatch(path));
    }
    text += line + "\n";
    const ssize_t written = ::write(fd, text.data(), text.size());
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (written != static_cast<ssize_t>(text.size())) {
        throw runtime_error("cannot append to results CSV '" + path + "'");
    }
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush()) throw runtime_error("cannot write '" + temporary + "'");
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        throw runtime_error("cannot rename '" + temporary + "' to '" + path +
                            "': " + std::strerror(errno));
    }
}

}  // namespace gpurelay
