#include "app/provenance.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <limits>
#include <type_traits>

#include "app/git_hash.hpp"
#include "app/version.hpp"
#include "comm/mpi_error.hpp"
#include "comm/mpi_session.hpp"
#include "comm/mpi_wait.hpp"
#include "io/result_schema.hpp"
#include "runtime/gpu_clocks.hpp"

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
                           const std::vector<std::string>& gpus,
                           const std::vector<Placement>& placements) {
    Attributes attrs;
    const Config& config = setup.config;
    for (const auto& key : config_keys()) {
        const std::string text = config_value_toml(config, key.name);
        if (key.name == "elements") {  // one type whatever the number of sizes: a 1-D array
            const std::vector<std::uint64_t> sizes = config.size_list();
            attrs.emplace_back("elements", std::vector<std::int64_t>(sizes.begin(), sizes.end()));
            continue;
        }
        if (text.size() >= 2 && text.front() == '"') {
            attrs.emplace_back(std::string(key.name), text.substr(1, text.size() - 2));
            continue;
        }
        if (text == "true" || text == "false") {  // a boolean key, typed as h5py reads one
            attrs.emplace_back(std::string(key.name), text == "true");
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
    // Core lists hold commas: these lists are separated by semicolons.
    std::string cores, core_numa, gpu_numa;
    for (std::size_t r = 0; r < placements.size(); ++r) {
        cores += (r ? ";" : "") + placements[r].cores;
        core_numa += (r ? ";" : "") + placements[r].core_numa;
        gpu_numa += (r ? ";" : "") + placements[r].gpu_numa;
    }
    attrs.emplace_back("rank_cores", cores);
    attrs.emplace_back("rank_core_numa", core_numa);
    attrs.emplace_back("rank_gpu_numa", gpu_numa);
    attrs.emplace_back("started_utc", utc_timestamp());
    // false until the close of a complete, verified run sets it: a reader of a .partial file
    // finds it too (and a resumed run starts from false again).
    attrs.emplace_back("verified", false);
    attrs.emplace_back("description",
                       std::string("gpurelay result file: B's output /y at the written steps, "
                                   "phase times per rank and step (/timings), wrong elements "
                                   "per pair and step (/verification), one group per pass"));
    // Attributes cannot carry attributes of their own: the special values are said here.
    attrs.emplace_back("sentinels",
                       std::string("complete: 0 while the run is in progress or stopped, 1 once "
                                   "it closed; stopped_at_step, stopped_pass, resumed_from_step: "
                                   "-1 when the run was not stopped, or not resumed; stop_signal: "
                                   "the signal's number (15 SIGTERM, 2 SIGINT, 10 SIGUSR1); NaN in "
                                   "/timings: a phase not this rank's, or not timed"));
    return attrs;
}

namespace {

void fill_spread(const PassSummary& p, double (*spread)[4], std::int64_t& slow_steps) {
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        const PhaseStats& st = p.phases[ph];
        spread[ph][0] = st.p50;
        spread[ph][1] = st.p90;
        spread[ph][2] = st.p99;
        spread[ph][3] = st.cv;
    }
    slow_steps = p.slow_steps;
}

std::string list_text(const std::vector<std::int64_t>& numbers) {
    std::string text;
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "," + to_string().
    for (const std::int64_t n : numbers) {
        if (!text.empty()) text += ',';
        text += std::to_string(n);
    }
    return text;
}

using Run = const RunSummary&;
using Pass = const PassSummary&;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The attribution belongs to the overlap=on pass of a compare run.
OverlapAttribution attribution_of(Run s, Pass p) {
    return &p == &s.passes.back() ? attribute_overlap(s) : OverlapAttribution{};
}
double ceiling(Run s, double Ceilings::*figure) {
    return s.ceilings.measured ? s.ceilings.*figure : kNaN;
}
double attributed(Run s, Pass p, double OverlapAttribution::*term) {
    const OverlapAttribution a = attribution_of(s, p);
    return a.measured ? a.*term : kNaN;
}

// The pass figures the JSON carries beyond the timings, as /timings/PASS attributes: one table
// that the writer walks. NaN figures (not measured, or not this pass's) are left out, where the
// JSON has null or nothing.
struct PassFigure {
    const char* name;
    double (*value)(Run, Pass);
};
const PassFigure kPassFigures[] = {
    {"ceiling_transfer_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::transfer_ms); }},
    {"ceiling_a_copy_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::a_copy_ms); }},
    {"ceiling_b_copy_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::b_copy_ms); }},
    {"ceiling_c_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::c_ms); }},
    {"ceiling_cost_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::cost_ms); }},
    {"transfer_vs_ceiling",
     [](Run s, Pass p) {
         return s.ceilings.measured ? against_ceilings(p, s.ceilings).transfer : kNaN;
     }},
    {"a_vs_copy",
     [](Run s, Pass p) { return s.ceilings.measured ? against_ceilings(p, s.ceilings).a : kNaN; }},
    {"b_vs_copy",
     [](Run s, Pass p) { return s.ceilings.measured ? against_ceilings(p, s.ceilings).b : kNaN; }},
    {"c_vs_alone",
     [](Run s, Pass p) { return s.ceilings.measured ? against_ceilings(p, s.ceilings).c : kNaN; }},
    {"step_p90_over_median", [](Run, Pass p) { return step_stability(p).p90_over_median; }},
    {"step_cv", [](Run, Pass p) { return step_stability(p).cv; }},
    {"step_max_over_median", [](Run, Pass p) { return step_stability(p).max_over_median; }},
    {"sm_clock_start_mhz", [](Run, Pass p) { return p.sm_clock_start_mhz; }},
    {"sm_clock_end_mhz", [](Run, Pass p) { return p.sm_clock_end_mhz; }},
    {"sm_clock_max_mhz", [](Run, Pass p) { return p.sm_clock_max_mhz; }},
    {"overlap_attribution_step_ms",
     [](Run s, Pass p) { return attributed(s, p, &OverlapAttribution::step_ms); }},
    {"overlap_attribution_perfect_overlap_ms",
     [](Run s, Pass p) { return attributed(s, p, &OverlapAttribution::perfect_ms); }},
    {"overlap_attribution_c_slowdown_ms",
     [](Run s, Pass p) { return attributed(s, p, &OverlapAttribution::c_slowdown_ms); }},
    {"overlap_attribution_transfer_slowdown_ms",
     [](Run s, Pass p) { return attributed(s, p, &OverlapAttribution::transfer_slowdown_ms); }},
    {"overlap_attribution_rest_ms",
     [](Run s, Pass p) { return attributed(s, p, &OverlapAttribution::rest_ms); }},
};
constexpr std::size_t kPassFigureCount = std::size(kPassFigures);

// The pass's yes/no judgements, as booleans: -1 where one does not apply to the pass.
struct PassFlag {
    const char* name;
    int (*value)(Run, Pass);
};
const PassFlag kPassFlags[] = {
    {"transfer_is_waiting", [](Run s, Pass p) { return transfer_is_waiting(s, p) ? 1 : 0; }},
    {"step_unstable", [](Run, Pass p) { return step_stability(p).unstable ? 1 : 0; }},
    {"step_model_explains", [](Run, Pass p) { return step_model_explains(p) ? 1 : 0; }},
    {"clocks_measured", [](Run, Pass p) { return p.clocks_measured ? 1 : 0; }},
    {"overlap_attribution_explains",
     [](Run s, Pass p) {
         const OverlapAttribution a = attribution_of(s, p);
         return a.measured ? (a.explains ? 1 : 0) : -1;
     }},
};
constexpr std::size_t kPassFlagCount = std::size(kPassFlags);

// One line per pair (group), as the JSON's pairs: its ranks, median step and transfer, and
// whether it is flagged slow.
std::string pairs_text(const PassSummary& p) {
    std::string text;
    char line[160];
    for (const PairFigures& f : p.pairs) {
        std::snprintf(line, sizeof line,
                      "%spair %d: ranks %d -> %d, step %.6g ms, transfer %.6g ms "
                      "(%.6g GB/s)%s",
                      text.empty() ? "" : "; ", f.pair, f.producer, f.consumer, f.step_ms,
                      f.transfer_ms, f.transfer_gbps, f.slow ? ", slow" : "");
        text += line;
    }
    return text;
}

// The distributions, the slow steps and the pairs, as the JSON has them.
void add_spread(Attributes& timings, const double (*spread)[4], std::int64_t slow_steps,
                const char* slow_step_numbers, const char* pairs) {
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        const std::string name = kPhases[ph].name;
        timings.emplace_back(name + "_p50_ms", spread[ph][0]);
        timings.emplace_back(name + "_p90_ms", spread[ph][1]);
        timings.emplace_back(name + "_p99_ms", spread[ph][2]);
        timings.emplace_back(name + "_cv", spread[ph][3]);
    }
    timings.emplace_back("slow_steps", slow_steps);
    timings.emplace_back("slow_step_numbers", std::string(slow_step_numbers));
    timings.emplace_back("pairs", std::string(pairs));
}

}  // namespace

GroupAttributes pass_attributes(MPI_Comm comm, const RunSummary& summary,
                                const std::string& group) {
    // The figures are rank 0's; every rank writes the same attribute metadata, so they travel.
    constexpr int kReals = 10, kCounts = 10, kTiming = 32, kLists = 512;
    struct Figures {
        double judged[kPassFigureCount];
        std::int8_t flags[kPassFlagCount];
        std::int8_t clocks_measured;
        char clock_slowdowns[kLists / 2], attribution_why_not[kLists];
        double reals[kReals];
        std::int64_t counts[kCounts];
        char timing[kTiming];
        // Each timed phase's p50, p90, p99 and cv; the slow steps; the pairs as text.
        double spread[kPhaseCount][4];
        std::int64_t slow_steps;
        char slow_step_numbers[kTiming], pairs[kLists];
    };
    static_assert(std::is_trivially_copyable_v<Figures>, "Figures travel as bytes");
    std::vector<Figures> figures(summary.passes.size());
    for (std::size_t i = 0; i < figures.size(); ++i) {
        const PassSummary& p = summary.passes[i];
        figures[i] = {
            {},
            {},
            static_cast<std::int8_t>(p.clocks_measured ? 1 : 0),
            {},
            {},
            {p.time_per_step_ms, p.steps_per_s, p.transfer_ms, p.transfer_gbps, p.aggregate_gbps,
             p.a_gbps, p.b_gbps, p.c_giter_per_s, p.cold_step_ms, p.step_bound_ms},
            {p.overlap ? 1 : 0, p.timed_steps, p.timed_from, p.phase_timed_steps,
             static_cast<std::int64_t>(p.x_mismatches), static_cast<std::int64_t>(p.c_mismatches),
             static_cast<std::int64_t>(p.spot_mismatches), static_cast<std::int64_t>(p.x_checked),
             static_cast<std::int64_t>(p.c_checked), static_cast<std::int64_t>(p.spot_checked)},
            {},
            {},
            0,
            {},
            {}};
        p.timing.copy(figures[i].timing, kTiming - 1);
        fill_spread(p, figures[i].spread, figures[i].slow_steps);
        list_text(p.slow_step_numbers).copy(figures[i].slow_step_numbers, kTiming - 1);
        pairs_text(p).copy(figures[i].pairs, kLists - 1);
        for (std::size_t f = 0; f < kPassFigureCount; ++f)
            figures[i].judged[f] = kPassFigures[f].value(summary, p);
        for (std::size_t f = 0; f < kPassFlagCount; ++f)
            figures[i].flags[f] = static_cast<std::int8_t>(kPassFlags[f].value(summary, p));
        clock_slowdown_names(p.clock_reasons).copy(figures[i].clock_slowdowns, kLists / 2 - 1);
        attribution_of(summary, p).why_not.copy(figures[i].attribution_why_not, kLists - 1);
    }
    const Deadline bound("the broadcast of a pass's figures for the file");
    MPI_CHECK(MPI_Bcast(figures.data(), static_cast<int>(figures.size() * sizeof(Figures)),
                        MPI_BYTE, 0, comm));
    GroupAttributes groups;
    for (const Figures& f : figures) {
        const bool overlap = f.counts[0] != 0;
        const char* const real_names[kReals] = {
            "time_per_step_ms", "steps_per_s", "transfer_ms",   "transfer_gbps", "aggregate_gbps",
            "a_gbps",           "b_gbps",      "c_giter_per_s", "cold_step_ms",  "step_model_ms"};
        Attributes timings;
        for (int r = 0; r < kReals; ++r) timings.emplace_back(real_names[r], f.reals[r]);
        timings.emplace_back("timed_steps", f.counts[1]);
        timings.emplace_back("timed_from_step", f.counts[2]);
        timings.emplace_back("phase_timed_steps", f.counts[3]);
        timings.emplace_back("timing", std::string(f.timing));
        add_spread(timings, f.spread, f.slow_steps, f.slow_step_numbers, f.pairs);
        for (std::size_t j = 0; j < kPassFigureCount; ++j) {
            if (!std::isnan(f.judged[j])) timings.emplace_back(kPassFigures[j].name, f.judged[j]);
        }
        for (std::size_t j = 0; j < kPassFlagCount; ++j) {
            if (f.flags[j] >= 0) timings.emplace_back(kPassFlags[j].name, f.flags[j] == 1);
        }
        if (f.clocks_measured == 1)
            timings.emplace_back("clock_slowdowns", std::string(f.clock_slowdowns));
        if (f.attribution_why_not[0] != '\0') {
            timings.emplace_back("overlap_attribution_why_not", std::string(f.attribution_why_not));
        }
        groups.push_back(
            {group + "/timings/" + ResultSchema::pass_group(overlap), std::move(timings)});
        groups.push_back({group + "/verification/" + ResultSchema::pass_group(overlap),
                          {{"x_mismatches", f.counts[4]},
                           {"c_mismatches", f.counts[5]},
                           {"spot_mismatches", f.counts[6]},
                           {"x_checked", f.counts[7]},
                           {"c_checked", f.counts[8]},
                           {"spot_checked", f.counts[9]},
                           {"verified", f.counts[4] + f.counts[5] + f.counts[6] == 0}}});
    }
    // A relay's figures, as the JSON's pass has them, beside each pass's timings.
    for (std::size_t i = 0; i < summary.passes.size(); ++i) {
        if (!summary.passes[i].relay) continue;
        groups[2 * i].second.emplace_back("relay", relay_json_from_root(comm, summary.passes[i]));
    }
    return groups;
}

}  // namespace gpurelay
