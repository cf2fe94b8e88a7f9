#include "app/provenance.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <system_error>
#include <type_traits>
#include <variant>

#include "app/git_hash.hpp"
#include "io/result_schema.hpp"
#include "mpi/error.hpp"
#include "mpi/session.hpp"
#include "mpi/stop_request.hpp"
#include "report/render.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {

namespace {

// Where this binary is installed, found from its own path, never from a prefix compiled in, so
// that a prefix moved elsewhere (a relocated Spack install) still names its own decks and batch
// templates; only the layout below the prefix, relative to the binary's folder, is compiled in.
std::string install_text() {
    namespace fs = std::filesystem;
    std::error_code error;
    // canonical: a link to the binary (a Spack view's bin/) names the prefix that holds it.
    const fs::path bin = fs::canonical("/proc/self/exe", error).parent_path();
    if (error) return "installed: unknown (/proc/self/exe cannot be read)\n";
    // bin/.. normalises to "prefix/": the last, empty name is dropped.
    const auto below_bin = [&](const char* relative) {
        const fs::path path = (bin / relative).lexically_normal();
        return path.has_filename() ? path : path.parent_path();
    };
    const fs::path data = below_bin(GPURELAY_BIN_TO_DATA);
    if (!fs::is_directory(data / "inputs", error)) {
        return "not installed: run from " + bin.string() +
               " (cmake --install puts it in a prefix)\n";
    }
    return "installed in " + below_bin(GPURELAY_BIN_TO_PREFIX).string() + ": decks in " +
           (data / "inputs").string() + ", batch templates in " + (data / "slurm").string() + "\n";
}

}  // namespace

std::string version_text() {
    return std::string("gpurelay " GPURELAY_VERSION " (git ") + kGitHash + ")\nCUDA " +
           cuda_version_string() + "\nNCCL " + nccl_version_string() + "\nMPI " +
           mpi_version_string() + "\nHDF5 " + hdf5_version() + "\n" + install_text();
}

std::string git_hash() { return kGitHash; }

std::string versions_line() {
    return std::string("gpurelay " GPURELAY_VERSION " (git ") + kGitHash + "), CUDA " +
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
    if (!text.empty() && *end == '\0') return {name, static_cast<std::int64_t>(integer)};
    const double real = std::strtod(text.c_str(), &end);
    if (!text.empty() && *end == '\0') return {name, real};
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
    attrs.emplace_back("gpurelay_version", std::string(GPURELAY_VERSION));
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

Attributes verdict_attributes(const RunSummary& summary, bool verified) {
    const PassSummary& main_pass = summary.main_pass();
    return {{"verified", verified},
            {"x_mismatches", static_cast<std::int64_t>(main_pass.x_mismatches)},
            {"c_mismatches", static_cast<std::int64_t>(main_pass.c_mismatches)},
            {"overlap_speedup", summary.overlap_speedup},
            {"cold_step_ms", summary.passes.front().cold_step_ms}};
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

// One line per pair (group), as the JSON's pairs, every one at any count.
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

// The distributions and the slow steps, as the JSON has them.
void add_spread(Attributes& timings, const PassSummary& p) {
    for (std::size_t ph = 0; ph < kPhaseCount; ++ph) {
        const PhaseStats& st = p.phases[ph];
        const std::string name = kPhases[ph].name;
        timings.emplace_back(name + "_p50_ms", st.p50);
        timings.emplace_back(name + "_p90_ms", st.p90);
        timings.emplace_back(name + "_p99_ms", st.p99);
        timings.emplace_back(name + "_cv", st.cv);
    }
    timings.emplace_back("slow_steps", p.slow_steps);
    timings.emplace_back("slow_step_numbers", comma_list(p.slow_step_numbers));
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

// A judged figure the pass has: NAME (its value as measured, whatever the verdict), NAME_ci95_lo
// and NAME_ci95_hi (its interval), NAME_withheld (the rule's code, where withheld).
void add_judged(Attributes& timings, const std::string& name, const Figure& figure) {
    if (!figure.measured()) return;
    timings.emplace_back(name, figure.value);
    if (figure.has_interval()) {
        timings.emplace_back(name + "_ci95_lo", figure.lo);
        timings.emplace_back(name + "_ci95_hi", figure.hi);
    }
    if (figure.withheld_by) timings.emplace_back(name + "_withheld", std::string(figure.reason()));
}

// /timings/PASS: the judged figures (on the last pass also the run's), counts, timing and spread,
// the measurements and flags, then the run's judgement of phases, pairs and a relay's figures.
Attributes timing_attributes(Run s, const Judgement& judged, std::size_t pass) {
    const PassSummary& p = s.passes[pass];
    Attributes timings;
    for (std::size_t i = 0; i < kPassFigCount; ++i) {
        add_judged(timings, figure_name(static_cast<PassFig>(i)).name,
                   judged.passes[pass].figures[i]);
    }
    for (std::size_t i = 0; i < kRunFigCount && pass + 1 == s.passes.size(); ++i) {
        add_judged(timings, figure_name(static_cast<RunFig>(i)).name, judged.run[i]);
    }
    for (const auto& count : kPassCounts) timings.emplace_back(count.name, p.*count.field);
    timings.emplace_back("timing", p.timing);
    add_spread(timings, p);
    for (const PassMeasure& measure : kPassMeasures) {
        const double value = measure.value(s, p);
        if (!std::isnan(value)) timings.emplace_back(measure.name, value);
    }
    timings.emplace_back("step_unstable", step_stability(p).unstable);
    timings.emplace_back("clocks_measured", p.clocks_measured);
    // The run's judgement, on each pass: the figures above are kept whether or not they read.
    timings.emplace_back("phase_times_readable", judged.readable());
    if (p.clocks_measured)
        timings.emplace_back("clock_slowdowns", clock_slowdown_names(p.clock_reasons));
    if (const std::string because = judged.codes(); !because.empty()) {
        timings.emplace_back("phase_times_unreadable_because", because);
        timings.emplace_back("phase_times_why", judged.text());
    }
    timings.emplace_back("pairs", pairs_text(p, judged.passes[pass]));
    if (p.relay) timings.emplace_back("relay", relay_json(p));
    return timings;
}

Attributes verification_attributes(const PassSummary& p) {
    Attributes verification;
    std::int64_t mismatches = 0;
    for (std::size_t i = 0; i < std::size(kVerificationCounts); ++i) {
        const auto count = static_cast<std::int64_t>(p.*kVerificationCounts[i].field);
        verification.emplace_back(kVerificationCounts[i].name, count);
        if (i < kMismatchCounts) mismatches += count;
    }
    verification.emplace_back("verified", mismatches == 0);
    return verification;
}

// Attributes as bytes and back, so that rank 0's travel to every rank in one broadcast: a text
// or a list after its length, a value after the index of its alternative.
struct AttributeBytes {
    std::string bytes;
    std::size_t at = 0;

    template <typename T>
    void put(const T& value) {
        if constexpr (std::is_same_v<T, AttributeValue>) {
            put(value.index());
            std::visit([&](const auto& held) { put(held); }, value);
        } else if constexpr (std::is_trivially_copyable_v<T>) {
            bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
        } else if constexpr (requires { value[0].second; }) {  // names (or paths) with their values
            put(value.size());
            for (const auto& [name, held] : value) {
                put(name);
                put(held);
            }
        } else {  // a std::string or a std::vector<std::int64_t>
            put(value.size());
            bytes.append(reinterpret_cast<const char*>(value.data()),
                         value.size() * sizeof value[0]);
        }
    }
    template <typename T>
    T take() {
        T value{};
        if constexpr (std::is_same_v<T, AttributeValue>) {
            return take_value();
        } else if constexpr (std::is_trivially_copyable_v<T>) {
            std::memcpy(&value, bytes.data() + at, sizeof value);
            at += sizeof value;
        } else if constexpr (requires { value[0].second; }) {
            value.resize(take<std::size_t>());
            for (auto& [name, held] : value) {
                name = take<std::string>();
                held = take<std::remove_cvref_t<decltype(held)>>();
            }
        } else {
            value.resize(take<std::size_t>());
            const std::size_t length = value.size() * sizeof value[0];
            std::memcpy(value.data(), bytes.data() + at, length);
            at += length;
        }
        return value;
    }
    AttributeValue take_value() {
        switch (take<std::size_t>()) {
            case 0:
                return take<std::string>();
            case 1:
                return take<std::int64_t>();
            case 2:
                return take<double>();
            case 3:
                return take<bool>();
            default:
                return take<std::vector<std::int64_t>>();
        }
    }
};

// Collective: rank 0's `groups` on every rank of `comm`.
GroupAttributes attributes_from_root(MPI_Comm comm, const GroupAttributes& groups,
                                     const std::string& what) {
    AttributeBytes out;
    out.put(groups);
    return AttributeBytes{broadcast_text(comm, out.bytes, what)}.take<GroupAttributes>();
}

}  // namespace

GroupAttributes pass_attributes(MPI_Comm comm, const RunSummary& summary,
                                const std::string& group) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    GroupAttributes groups;
    // The figures are rank 0's; every rank writes the same attribute metadata, so they travel.
    if (rank == 0) {
        const Judgement judged = judge(summary);
        for (std::size_t i = 0; i < summary.passes.size(); ++i) {
            const std::string pass = ResultSchema::pass_group(summary.passes[i].overlap);
            groups.push_back({group + "/timings/" + pass, timing_attributes(summary, judged, i)});
            groups.push_back(
                {group + "/verification/" + pass, verification_attributes(summary.passes[i])});
        }
    }
    return attributes_from_root(comm, groups, "the broadcast of a pass's figures for the file");
}

}  // namespace gpurelay
