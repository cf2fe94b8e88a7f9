#include "app/provenance.hpp"

#include <algorithm>
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
#include "mpi/stop_request.hpp"
#include "mpi/wait.hpp"
#include "report/render.hpp"
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

std::string launches_json(const ResumePoint& resume, const Stop& end) {
    const auto number = [](std::int64_t n) { return static_cast<long long>(n); };
    char entry[512];
    std::snprintf(entry, sizeof entry,
                  "{\"started_utc\": \"%s\", \"ended_utc\": \"%s\", \"git_hash\": \"%s\", "
                  "\"from_size\": %lld, \"from_pass\": %lld, \"from_step\": %lld, "
                  "\"end_size\": %lld, \"end_pass\": %lld, \"end_step\": %lld, "
                  "\"ended\": \"%s\"}",
                  resume.started_utc.c_str(), utc_timestamp().c_str(), kGitHash,
                  number(resume.size), number(resume.pass), number(resume.step), number(end.size),
                  number(end.pass), number(end.step),
                  end.signal == 0 ? "complete" : stop_signal_name(end.signal));
    std::string launches = resume.launches;  // "[...]", checked when it was read
    launches.pop_back();
    if (launches.size() > 1) launches += ", ";
    return launches + entry + "]";
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
    const auto list = [](const auto& ranks, const char* separator, auto part) {
        std::string text;
        for (std::size_t r = 0; r < ranks.size(); ++r)
            (text += r ? separator : "") += part(ranks[r]);
        return text;
    };
    const auto same = [](const std::string& text) { return text; };
    attrs.emplace_back("rank_hosts", list(hosts, ",", same));
    attrs.emplace_back("rank_devices", list(gpus, ",", same));
    // Core lists hold commas: these lists are separated by semicolons.
    attrs.emplace_back("rank_cores", list(placements, ";", [](auto& p) { return p.cores; }));
    attrs.emplace_back("rank_core_numa",
                       list(placements, ";", [](auto& p) { return p.core_numa; }));
    attrs.emplace_back("rank_gpu_numa", list(placements, ";", [](auto& p) { return p.gpu_numa; }));
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

using Run = const RunSummary&;
using Pass = const PassSummary&;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ceiling(Run s, double Ceilings::*figure) {
    return s.ceilings.measured ? s.ceilings.*figure : kNaN;
}

// The pass's measurements beyond the timings and the judged figures, as /timings/PASS
// attributes: one table that the writer walks. NaN ones (not measured) are left out, where the
// JSON has null or nothing.
struct PassMeasure {
    const char* name;
    double (*value)(Run, Pass);
};
const PassMeasure kPassMeasures[] = {
    {"ceiling_transfer_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::transfer_ms); }},
    {"ceiling_a_copy_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::a_copy_ms); }},
    {"ceiling_b_copy_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::b_copy_ms); }},
    {"ceiling_c_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::c_ms); }},
    {"ceiling_cost_ms", [](Run s, Pass) { return ceiling(s, &Ceilings::cost_ms); }},
    {"step_p90_over_median", [](Run, Pass p) { return step_stability(p).p90_over_median; }},
    {"step_cv", [](Run, Pass p) { return step_stability(p).cv; }},
    {"step_max_over_median", [](Run, Pass p) { return step_stability(p).max_over_median; }},
    {"sm_clock_start_mhz", [](Run, Pass p) { return p.sm_clock_start_mhz; }},
    {"sm_clock_end_mhz", [](Run, Pass p) { return p.sm_clock_end_mhz; }},
    {"sm_clock_max_mhz", [](Run, Pass p) { return p.sm_clock_max_mhz; }},
    {"cold_step_ms", [](Run, Pass p) { return p.cold_step_ms; }},
};
constexpr std::size_t kPassMeasureCount = std::size(kPassMeasures);

// The pass's yes/no judgements, as booleans.
struct PassFlag {
    const char* name;
    bool (*value)(Run, Pass);
};
const PassFlag kPassFlags[] = {
    {"step_unstable", [](Run, Pass p) { return step_stability(p).unstable; }},
    {"clocks_measured", [](Run, Pass p) { return p.clocks_measured; }},
};
constexpr std::size_t kPassFlagCount = std::size(kPassFlags);

// The judged figures a pass's attributes carry: the pass's, then on the last pass (the one of a
// compare run's speedup and attribution) the run's.
constexpr std::size_t kJudgedCount = kPassFigCount + kRunFigCount;
const char* judged_name(std::size_t i) {
    return i < kPassFigCount ? figure_name(static_cast<PassFig>(i)).name
                             : figure_name(static_cast<RunFig>(i - kPassFigCount)).name;
}

// One line per pair (group), as the JSON's pairs: its ranks, median step and transfer, its rate
// as measured and the rule that withholds it, and whether it is flagged slow. Every one, at any
// count (it travels apart from Figures).
std::string pairs_text(const PassSummary& p, const PassJudgement& judged) {
    std::string text;
    char line[200];
    for (std::size_t i = 0; i < p.pairs.size(); ++i) {
        const PairFigures& f = p.pairs[i];
        const Figure& rate = judged.links[i];
        std::snprintf(line, sizeof line,
                      "%spair %d: ranks %d -> %d, step %.6g ms, transfer %.6g ms "
                      "(%.6g GB/s%s%s)%s",
                      text.empty() ? "" : "; ", f.pair, f.producer, f.consumer, f.step_ms,
                      f.transfer_ms, f.transfer_gbps, rate.withheld_by ? ", withheld: " : "",
                      rate.reason(), f.slow ? ", slow" : "");
        text += line;
    }
    return text;
}

// The distributions, the slow steps and the pairs, as the JSON has them.
void add_spread(Attributes& timings, const double (*spread)[4], std::int64_t slow_steps,
                const char* slow_step_numbers) {
    static constexpr const char* kSpread[4] = {"_p50_ms", "_p90_ms", "_p99_ms", "_cv"};
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        for (int k = 0; k < 4; ++k) {
            timings.emplace_back(std::string(kPhases[ph].name) + kSpread[k], spread[ph][k]);
        }
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

constexpr int kTiming = 32, kLists = 512, kCode = 32;
// One pass's attributes as bytes, so that rank 0's travel to every rank in one broadcast.
struct Figures {
    // Each judged figure: its value, its interval's ends, and the rule that withholds it.
    double judged[kJudgedCount][3];
    char withheld[kJudgedCount][kCode];
    double measured[kPassMeasureCount];
    std::int8_t flags[kPassFlagCount];
    std::int8_t clocks_measured, overlap, readable;
    char clock_slowdowns[kLists / 2];
    std::int64_t counts[std::size(kPassCounts)];
    std::int64_t checks[std::size(kVerificationCounts)];
    char timing[kTiming];
    // Each timed phase's p50, p90, p99 and cv; the slow steps; the pairs as text.
    double spread[kPhaseCount][4];
    std::int64_t slow_steps;
    char slow_step_numbers[kTiming];
};
static_assert(std::is_trivially_copyable_v<Figures>, "Figures travel as bytes");

void fill_judged(const Figure& figure, double* value, char* withheld) {
    value[0] = figure.value;
    value[1] = figure.lo;
    value[2] = figure.hi;
    std::string(figure.reason()).copy(withheld, kCode - 1);
}

Figures figures_of(const RunSummary& summary, const Judgement& judged, std::size_t pass) {
    const PassSummary& p = summary.passes[pass];
    Figures f{};
    f.clocks_measured = static_cast<std::int8_t>(p.clocks_measured ? 1 : 0);
    f.overlap = static_cast<std::int8_t>(p.overlap ? 1 : 0);
    f.readable = static_cast<std::int8_t>(judged.readable() ? 1 : 0);
    for (std::size_t i = 0; i < std::size(kPassCounts); ++i) f.counts[i] = p.*kPassCounts[i].field;
    for (std::size_t i = 0; i < std::size(kVerificationCounts); ++i) {
        f.checks[i] = static_cast<std::int64_t>(p.*kVerificationCounts[i].field);
    }
    p.timing.copy(f.timing, kTiming - 1);
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        const PhaseStats& st = p.phases[ph];
        const double spread[4] = {st.p50, st.p90, st.p99, st.cv};
        std::copy(spread, spread + 4, f.spread[ph]);
    }
    f.slow_steps = p.slow_steps;
    comma_list(p.slow_step_numbers).copy(f.slow_step_numbers, kTiming - 1);
    const bool last = pass + 1 == summary.passes.size();
    for (std::size_t i = 0; i < kJudgedCount; ++i) {
        const Figure none;
        const Figure& figure = i < kPassFigCount ? judged.passes[pass].figures[i]
                               : last            ? judged.run[i - kPassFigCount]
                                                 : none;
        fill_judged(figure, f.judged[i], f.withheld[i]);
    }
    for (std::size_t i = 0; i < kPassMeasureCount; ++i)
        f.measured[i] = kPassMeasures[i].value(summary, p);
    for (std::size_t i = 0; i < kPassFlagCount; ++i)
        f.flags[i] = static_cast<std::int8_t>(kPassFlags[i].value(summary, p) ? 1 : 0);
    clock_slowdown_names(p.clock_reasons).copy(f.clock_slowdowns, kLists / 2 - 1);
    return f;
}

// Each judged figure the pass has: NAME (its value as measured, whatever the verdict),
// NAME_ci95_lo and NAME_ci95_hi (its interval), NAME_withheld (the rule's code, where withheld).
void add_judged(Attributes& timings, const Figures& f) {
    for (std::size_t i = 0; i < kJudgedCount; ++i) {
        if (std::isnan(f.judged[i][0])) continue;
        const std::string name = judged_name(i);
        timings.emplace_back(name, f.judged[i][0]);
        if (!std::isnan(f.judged[i][1]) && !std::isnan(f.judged[i][2])) {
            timings.emplace_back(name + "_ci95_lo", f.judged[i][1]);
            timings.emplace_back(name + "_ci95_hi", f.judged[i][2]);
        }
        if (f.withheld[i][0] != '\0') timings.emplace_back(name + "_withheld", f.withheld[i]);
    }
}

// /timings/PASS: the judged figures, counts, timing and spread, then the measurements and flags.
Attributes timing_attributes(const Figures& f) {
    Attributes timings;
    add_judged(timings, f);
    for (std::size_t i = 0; i < std::size(kPassCounts); ++i) {
        timings.emplace_back(kPassCounts[i].name, f.counts[i]);
    }
    timings.emplace_back("timing", std::string(f.timing));
    add_spread(timings, f.spread, f.slow_steps, f.slow_step_numbers);
    for (std::size_t j = 0; j < kPassMeasureCount; ++j) {
        if (!std::isnan(f.measured[j])) timings.emplace_back(kPassMeasures[j].name, f.measured[j]);
    }
    for (std::size_t j = 0; j < kPassFlagCount; ++j) {
        timings.emplace_back(kPassFlags[j].name, f.flags[j] == 1);
    }
    // The run's judgement, on each pass: the figures above are kept whether or not they read.
    timings.emplace_back("phase_times_readable", f.readable == 1);
    if (f.clocks_measured == 1)
        timings.emplace_back("clock_slowdowns", std::string(f.clock_slowdowns));
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
    const Judgement judged = judge(summary);
    std::vector<Figures> figures;
    for (std::size_t i = 0; i < summary.passes.size(); ++i) {
        figures.push_back(figures_of(summary, judged, i));
    }
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
    const std::string because = text_from_root(comm, judged.codes());
    const std::string why = text_from_root(comm, judged.text());
    for (std::size_t i = 0; i < summary.passes.size(); ++i) {
        Attributes& timings = groups[2 * i].second;
        if (!because.empty()) {
            timings.emplace_back("phase_times_unreadable_because", because);
            timings.emplace_back("phase_times_why", why);
        }
        timings.emplace_back("pairs",
                             text_from_root(comm, pairs_text(summary.passes[i], judged.passes[i])));
        if (!summary.passes[i].relay) continue;
        timings.emplace_back("relay", text_from_root(comm, relay_json(summary.passes[i])));
    }
    return groups;
}

}  // namespace gpurelay
