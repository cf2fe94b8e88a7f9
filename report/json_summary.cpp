// The JSON summary: the run, its typed config, the ranks and every pass, NaN written as null.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "report/report.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

// Each phase's distribution, by phase name.
nlohmann::json phases_json(const PassSummary& p) {
    nlohmann::json j;
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        j[phase.name] = {{"median", st.median}, {"min", st.min}, {"max", st.max}, {"p50", st.p50},
                         {"p90", st.p90},       {"p99", st.p99}, {"cv", st.cv}};
    }
    return j;
}

nlohmann::json pair_json(const PairFigures& f) {
    return {
        {"pair", f.pair},       {"producer", f.producer},       {"consumer", f.consumer},
        {"step_ms", f.step_ms}, {"transfer_ms", f.transfer_ms}, {"transfer_gbps", f.transfer_gbps},
        {"slow", f.slow}};
}

nlohmann::json pass_json(const PassSummary& p) {
    nlohmann::json j;
    j["overlap"] = p.overlap;
    // The steps the figures are over: timed_from to timed_from + timed_steps - 1.
    j["timed_from"] = p.timed_from;
    j["timed_steps"] = p.timed_steps;
    j["phases_ms"] = phases_json(p);
    j["slow_steps"] = {{"count", p.slow_steps},
                       {"first", p.slow_step_numbers},
                       {"over_median_x", kSlowStepFactor}};
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
                   {"phase_timed_steps", p.phase_timed_steps},
                   {"grouped_steps", p.grouped_steps},
                   {"retire_group_steps", p.retire_group_steps}};
    const Stability stability = step_stability(p);
    j["stability"] = {{"step_p90_over_median", stability.p90_over_median},
                      {"step_cv", stability.cv},
                      {"step_max_over_median", stability.max_over_median},
                      {"unstable", stability.unstable}};
    j["clocks"] = {
        {"measured", p.clocks_measured},    {"sm_start_mhz", p.sm_clock_start_mhz},
        {"sm_end_mhz", p.sm_clock_end_mhz}, {"sm_max_mhz", p.sm_clock_max_mhz},
        {"reasons_mask", p.clock_reasons},  {"slowdowns", clock_slowdown_names(p.clock_reasons)}};
    j["graphs"] = {{"captured", p.graphs_captured},
                   {"capture_ms", p.capture_ms},
                   {"steps_replayed", p.graph_steps}};
    j["verification"] = {{"x_checked", p.x_checked},       {"x_mismatches", p.x_mismatches},
                         {"c_checked", p.c_checked},       {"c_mismatches", p.c_mismatches},
                         {"spot_checked", p.spot_checked}, {"spot_mismatches", p.spot_mismatches},
                         {"passed", p.verified()}};
    for (const PairFigures& f : p.pairs) j["pairs"].push_back(pair_json(f));
    if (p.relay) j["relay"] = nlohmann::json::parse(relay_json(p));
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

// A deck value as JSON of its own type: the TOML literal (2, 2.0, true, "auto") is also JSON for
// every key gpurelay has; anything else stays the literal's text.
nlohmann::json typed_value(const std::string& toml_literal) {
    nlohmann::json value = nlohmann::json::parse(toml_literal, nullptr, /*allow_exceptions=*/false);
    return value.is_discarded() ? nlohmann::json(toml_literal) : value;
}

nlohmann::json rank_json(const RankInfo& r) {
    return {{"host", r.host},
            {"device", r.device},
            {"bus_id", r.bus_id},
            {"role", r.role},
            {"pair", r.pair},
            {"peer_link", r.peer_link},
            {"cores", r.cores},
            {"core_numa", r.core_numa},
            {"gpu_numa", r.gpu_numa},
            {"core_count", r.core_count},
            {"host_threads", r.host_threads}};
}

// The ceilings, the overlap's attribution and its speedup, where the run measured them.
void add_overlap_figures(const RunSummary& s, nlohmann::json& j) {
    if (s.ceilings.measured) {
        const Ceilings& c = s.ceilings;
        j["ceilings_ms"] = {{"transfer", c.transfer_ms},
                            {"a_copy", c.a_copy_ms},
                            {"b_copy", c.b_copy_ms},
                            {"c", c.c_ms},
                            {"cost", c.cost_ms}};
        if (!c.hop_transfer_ms.empty()) j["ceilings_ms"]["hops"] = c.hop_transfer_ms;
    }
    if (const OverlapAttribution a = attribute_overlap(s); a.measured) {
        j["overlap_attribution_ms"] = {{"step", a.step_ms},
                                       {"perfect_overlap", a.perfect_ms},
                                       {"c_slowdown", a.c_slowdown_ms},
                                       {"transfer_slowdown", a.transfer_slowdown_ms},
                                       {"rest", a.rest_ms}};
        j["overlap_attribution_explains"] = a.explains;
        j["overlap_attribution_why_not"] = a.why_not;
    }
    if (s.overlap_speedup > 0) {
        j["overlap_speedup"] = s.overlap_speedup;
        j["overlap_speedup_includes_io"] = s.speedup_includes_io();
        j["overlap_ideal_ms"] = s.overlap_ideal_ms;
    }
}

// Whether the phase times can be read, and where not, why and which figures the report left out
// (every one of them is still here).
nlohmann::json reading_json(const PhaseReading& reading) {
    nlohmann::json j = {{"readable", reading.readable()},
                        {"reasons", nlohmann::json::array()},
                        {"why", reading.text()},
                        {"withheld", nlohmann::json::array()}};
    for (const UnreadableReason& reason : reading.reasons) j["reasons"].push_back(reason.code);
    for (const WithheldFigure& figure : kWithheldFigures) {
        if (!reading.readable()) j["withheld"].push_back(figure.json);
    }
    return j;
}

}  // namespace

std::string sizes_json(const std::vector<RunSummary>& sizes, bool verified) {
    nlohmann::ordered_json j;
    j["schema_version"] = kSummarySchemaVersion;
    j["sizes"] = nlohmann::ordered_json::array();
    j["verified"] = verified;
    j["cases"] = nlohmann::ordered_json::array();
    for (const RunSummary& size : sizes) {
        j["sizes"].push_back(size.config.elements);
        j["cases"].push_back(nlohmann::ordered_json::parse(summary_json(size)));
    }
    return j.dump(2) + "\n";
}

std::string ranks_json(const RunSummary& s) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankInfo& r : s.ranks) ranks.push_back(rank_json(r));
    return ranks.dump();
}

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
    j["host_wait"] = s.host_wait;
    j["host_wait_reason"] = s.host_wait_reason;
    for (const auto& key : config_keys()) {
        j["config"][std::string(key.name)] = typed_value(config_value_toml(s.config, key.name));
    }
    j["config_toml"] = config_to_toml(s.config);
    for (const RankInfo& r : s.ranks) j["ranks"].push_back(rank_json(r));
    for (const PassSummary& p : s.passes) {
        nlohmann::json pass = pass_json(p);
        pass["transfer_is_waiting"] = transfer_is_waiting(s, p);
        pass["step_model_explains"] = step_model_explains(p);
        if (s.ceilings.measured) {
            const CeilingRatios r = against_ceilings(p, s.ceilings);
            pass["vs_ceilings"] = {{"transfer", r.transfer}, {"a", r.a}, {"b", r.b}, {"c", r.c}};
        }
        j["passes"].push_back(pass);
    }
    add_overlap_figures(s, j);
    j["waiting_cause"] = waiting_cause(s);
    j["phase_times"] = reading_json(read_phase_times(s));
    j["device_bytes"] = s.device_bytes;
    j["host_bytes"] = s.host_bytes;
    j["write_gbps"] = s.write_gbps;
    j["verified"] = s.verified();
    return without_nan(j).dump(2) + "\n";
}

}  // namespace gpurelay
