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
#include "io/result_schema.hpp"
#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/wait.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {

std::string version_text() {
    return std::string("gpurelay ") + kVersion + " (git " + kGitHash + ")\nCUDA " +
           cuda_version_string() + "\nNCCL " + nccl_version_string() + "\nMPI " +
           mpi_version_string() + "\nHDF5 " + hdf5_version() + "\n" + install_text();
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

namespace {

// One resolved key as a typed attribute: a TOML string as text, true or false as a boolean (as
// h5py reads one), a whole number as int64, any other number as a double, and `elements` always a
// 1-D int64 array of the sizes, whatever their number.
std::pair<std::string, AttributeValue> key_attribute(const Config& config, std::string_view key) {
    const std::string name(key);
    if (key == "elements") {
        const std::vector<std::uint64_t> sizes = config.size_list();
        return {name, std::vector<std::int64_t>(sizes.begin(), sizes.end())};
    }
    const std::string text = config_value_toml(config, key);
    if (text.size() >= 2 && text.front() == '"') return {name, text.substr(1, text.size() - 2)};
    if (text == "true" || text == "false") return {name, text == "true"};
    char* end = nullptr;
    const long long integer = std::strtoll(text.c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && !text.empty()) {
        return {name, static_cast<std::int64_t>(integer)};
    }
    const double real = std::strtod(text.c_str(), &end);
    if (end != nullptr && *end == '\0' && !text.empty()) return {name, real};
    return {name, text};
}

// Every rank's host, device and placement, each a list in rank order.
void add_rank_lists(Attributes& attrs, const std::vector<std::string>& hosts,
                    const std::vector<std::string>& gpus,
                    const std::vector<Placement>& placements) {
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
}

}  // namespace

Attributes root_attributes(const Setup& setup, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& gpus,
                           const std::vector<Placement>& placements) {
    Attributes attrs;
    const Config& config = setup.config;
    for (const auto& key : config_keys()) attrs.push_back(key_attribute(config, key.name));
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
    add_rank_lists(attrs, hosts, gpus, placements);
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
    // The run's judgement, on each pass: its figures above are kept whether or not they read.
    {"phase_times_readable", [](Run s, Pass) { return read_phase_times(s).readable() ? 1 : 0; }},
    {"overlap_attribution_explains",
     [](Run s, Pass p) {
         const OverlapAttribution a = attribution_of(s, p);
         return a.measured ? (a.explains ? 1 : 0) : -1;
     }},
};
constexpr std::size_t kPassFlagCount = std::size(kPassFlags);

// One line per pair (group), as the JSON's pairs: its ranks, median step and transfer, and
// whether it is flagged slow. Every one, at any count (it travels apart from Figures).
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
                const char* slow_step_numbers) {
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        const std::string name = kPhases[ph].name;
        timings.emplace_back(name + "_p50_ms", spread[ph][0]);
        timings.emplace_back(name + "_p90_ms", spread[ph][1]);
        timings.emplace_back(name + "_p99_ms", spread[ph][2]);
        timings.emplace_back(name + "_cv", spread[ph][3]);
    }
    timings.emplace_back("slow_steps", slow_steps);
    timings.emplace_back("slow_step_numbers", std::string(slow_step_numbers));
}

// A field of the pass's summary, as the file names it.
template <typename T>
struct PassField {
    const char* name;
    T PassSummary::*field;
};
// The pass's own figures and counts, in their order in /timings/PASS.
constexpr PassField<double> kPassReals[] = {{"time_per_step_ms", &PassSummary::time_per_step_ms},
                                            {"steps_per_s", &PassSummary::steps_per_s},
                                            {"transfer_ms", &PassSummary::transfer_ms},
                                            {"transfer_gbps", &PassSummary::transfer_gbps},
                                            {"aggregate_gbps", &PassSummary::aggregate_gbps},
                                            {"a_gbps", &PassSummary::a_gbps},
                                            {"b_gbps", &PassSummary::b_gbps},
                                            {"c_giter_per_s", &PassSummary::c_giter_per_s},
                                            {"cold_step_ms", &PassSummary::cold_step_ms},
                                            {"step_model_ms", &PassSummary::step_bound_ms}};
constexpr PassField<std::int64_t> kPassCounts[] = {
    {"timed_steps", &PassSummary::timed_steps},
    {"timed_from_step", &PassSummary::timed_from},
    {"phase_timed_steps", &PassSummary::phase_timed_steps}};
// /verification/PASS: the mismatches first (the verdict is their sum being 0), then the checks.
constexpr PassField<std::uint64_t> kVerificationCounts[] = {
    {"x_mismatches", &PassSummary::x_mismatches},
    {"c_mismatches", &PassSummary::c_mismatches},
    {"spot_mismatches", &PassSummary::spot_mismatches},
    {"x_checked", &PassSummary::x_checked},
    {"c_checked", &PassSummary::c_checked},
    {"spot_checked", &PassSummary::spot_checked}};
constexpr std::size_t kMismatchCounts = 3;

constexpr int kTiming = 32, kLists = 512;
// One pass's attributes as bytes, so that rank 0's travel to every rank in one broadcast.
struct Figures {
    double judged[kPassFigureCount];
    std::int8_t flags[kPassFlagCount];
    std::int8_t clocks_measured, overlap;
    char clock_slowdowns[kLists / 2], attribution_why_not[kLists];
    double reals[std::size(kPassReals)];
    std::int64_t counts[std::size(kPassCounts)];
    std::int64_t checks[std::size(kVerificationCounts)];
    char timing[kTiming];
    // Each timed phase's p50, p90, p99 and cv; the slow steps; the pairs as text.
    double spread[kPhaseCount][4];
    std::int64_t slow_steps;
    char slow_step_numbers[kTiming];
};
static_assert(std::is_trivially_copyable_v<Figures>, "Figures travel as bytes");

Figures figures_of(const RunSummary& summary, const PassSummary& p) {
    Figures f{};
    f.clocks_measured = static_cast<std::int8_t>(p.clocks_measured ? 1 : 0);
    f.overlap = static_cast<std::int8_t>(p.overlap ? 1 : 0);
    for (std::size_t i = 0; i < std::size(kPassReals); ++i) f.reals[i] = p.*kPassReals[i].field;
    for (std::size_t i = 0; i < std::size(kPassCounts); ++i) f.counts[i] = p.*kPassCounts[i].field;
    for (std::size_t i = 0; i < std::size(kVerificationCounts); ++i) {
        f.checks[i] = static_cast<std::int64_t>(p.*kVerificationCounts[i].field);
    }
    p.timing.copy(f.timing, kTiming - 1);
    fill_spread(p, f.spread, f.slow_steps);
    list_text(p.slow_step_numbers).copy(f.slow_step_numbers, kTiming - 1);
    for (std::size_t i = 0; i < kPassFigureCount; ++i)
        f.judged[i] = kPassFigures[i].value(summary, p);
    for (std::size_t i = 0; i < kPassFlagCount; ++i)
        f.flags[i] = static_cast<std::int8_t>(kPassFlags[i].value(summary, p));
    clock_slowdown_names(p.clock_reasons).copy(f.clock_slowdowns, kLists / 2 - 1);
    attribution_of(summary, p).why_not.copy(f.attribution_why_not, kLists - 1);
    return f;
}

// /timings/PASS: the pass's figures, counts, timing and spread, then the judged figures and flags
// that apply to it.
Attributes timing_attributes(const Figures& f) {
    Attributes timings;
    for (std::size_t i = 0; i < std::size(kPassReals); ++i) {
        timings.emplace_back(kPassReals[i].name, f.reals[i]);
    }
    for (std::size_t i = 0; i < std::size(kPassCounts); ++i) {
        timings.emplace_back(kPassCounts[i].name, f.counts[i]);
    }
    timings.emplace_back("timing", std::string(f.timing));
    add_spread(timings, f.spread, f.slow_steps, f.slow_step_numbers);
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
    return timings;
}

Attributes verification_attributes(const Figures& f) {
    Attributes verification;
    std::int64_t mismatches = 0;
    for (std::size_t i = 0; i < std::size(kVerificationCounts); ++i) {
        verification.emplace_back(kVerificationCounts[i].name, f.checks[i]);
        if (i < kMismatchCounts) mismatches += f.checks[i];
    }
    verification.emplace_back("verified", mismatches == 0);
    return verification;
}

}  // namespace

GroupAttributes pass_attributes(MPI_Comm comm, const RunSummary& summary,
                                const std::string& group) {
    // The figures are rank 0's; every rank writes the same attribute metadata, so they travel.
    std::vector<Figures> figures;
    for (const PassSummary& p : summary.passes) figures.push_back(figures_of(summary, p));
    const Deadline bound("the broadcast of a pass's figures for the file");
    MPI_CHECK(MPI_Bcast(figures.data(), static_cast<int>(figures.size() * sizeof(Figures)),
                        MPI_BYTE, 0, comm));
    GroupAttributes groups;
    for (const Figures& f : figures) {
        const std::string pass = ResultSchema::pass_group(f.overlap != 0);
        groups.push_back({group + "/timings/" + pass, timing_attributes(f)});
        groups.push_back({group + "/verification/" + pass, verification_attributes(f)});
    }
    // Texts of any length travel apart: why the phase times cannot be read (the run's, on each
    // pass), every pair (group) of each pass, and a relay's figures as the JSON's pass has them.
    const PhaseReading reading = read_phase_times(summary);
    const std::string because = text_from_root(comm, reading.codes());
    const std::string why = text_from_root(comm, reading.text());
    for (std::size_t i = 0; i < summary.passes.size(); ++i) {
        Attributes& timings = groups[2 * i].second;
        if (!because.empty()) {
            timings.emplace_back("phase_times_unreadable_because", because);
            timings.emplace_back("phase_times_why", why);
        }
        timings.emplace_back("pairs", text_from_root(comm, pairs_text(summary.passes[i])));
        if (!summary.passes[i].relay) continue;
        timings.emplace_back("relay", text_from_root(comm, relay_json(summary.passes[i])));
    }
    return groups;
}

}  // namespace gpurelay
