// The JSON summary: the run, its typed config, the ranks and every pass with its judged figures.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "report/render.hpp"
#include "runtime/gpu_clocks.hpp"

namespace gpurelay {
namespace {

nlohmann::json phases_json(const PassSummary& p) {
    nlohmann::json j;
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        j[phase.name] = {{"median", st.median}, {"median_ci95", {st.median_lo, st.median_hi}},
                         {"min", st.min},       {"max", st.max},
                         {"p50", st.p50},       {"p90", st.p90},
                         {"p99", st.p99},       {"cv", st.cv}};
    }
    return j;
}

nlohmann::json figure_json(const Figure& f, const FigureName& name) {
    nlohmann::json j = {{"value", f.value},
                        {"unit", name.unit},
                        {"verdict", f.withheld_by == nullptr ? "shown" : "withheld"}};
    if (f.has_interval()) j["ci95"] = {f.lo, f.hi};
    if (f.withheld_by != nullptr) j.update({{"reason", f.reason()}, {"why", f.why}});
    return j;
}

nlohmann::json pair_json(const PairFigures& f, const Figure& rate) {
    nlohmann::json j = {
        {"pair", f.pair},       {"producer", f.producer},       {"consumer", f.consumer},
        {"step_ms", f.step_ms}, {"transfer_ms", f.transfer_ms}, {"transfer_gbps", rate.rendered()},
        {"slow", f.slow}};
    if (rate.withheld_by != nullptr) j["withheld"] = rate.reason();
    return j;
}

// Each figure under "figures", and rendered (null where withheld) in its first layout's field.
void add_pass_figures(const PassJudgement& judged, nlohmann::json& j) {
    for (std::size_t i = 0; i < kPassFigCount; ++i) {
        const Figure& f = judged.figures[i];
        const FigureName& name = figure_name(static_cast<PassFig>(i));
        j[name.name] = f.rendered();
        if (f.measured()) j["figures"][name.name] = figure_json(f, name);
    }
    j["algbw_gbps"] = judged[PassFig::transfer_rate].rendered();
}

nlohmann::json pass_json(const PassSummary& p, const PassJudgement& judged) {
    // The steps the figures are over: timed_from to timed_from + timed_steps - 1.
    nlohmann::json j = {{"overlap", p.overlap},           {"timed_from", p.timed_from},
                        {"timed_steps", p.timed_steps},   {"phases_ms", phases_json(p)},
                        {"cold_step_ms", p.cold_step_ms}, {"write_wait_ms", p.write_wait_ms}};
    j["slow_steps"] = {{"count", p.slow_steps},
                       {"first", p.slow_step_numbers},
                       {"over_median_x", kSlowStepFactor}};
    add_pass_figures(judged, j);
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
    for (std::size_t i = 0; i < p.pairs.size(); ++i)
        j["pairs"].push_back(pair_json(p.pairs[i], judged.links[i]));
    if (p.relay) j["relay"] = nlohmann::json::parse(relay_json(p));
    return j;
}

// A deck value as JSON of its own type: the TOML literal (2, 2.0, true, "auto") is also JSON for
// every key gpurelay has; anything else stays the literal's text.
nlohmann::json typed_value(const std::string& toml_literal) {
    nlohmann::json value = nlohmann::json::parse(toml_literal, nullptr, /*allow_exceptions=*/false);
    return value.is_discarded() ? nlohmann::json(toml_literal) : value;
}

nlohmann::json rank_json(const RankInfo& r) {
    nlohmann::json j;
    for (const RankField& f : kRankFields) {
        if (f.text != nullptr) j[f.name] = r.*f.text;
        if (f.count != nullptr) j[f.name] = r.*f.count;
    }
    return j;
}

// The ceilings; the run's figures under "figures", and rendered in the first layout's fields.
void add_overlap_figures(const RunSummary& s, const Judgement& judged, nlohmann::json& j) {
    if (s.ceilings.measured) {
        const Ceilings& c = s.ceilings;
        j["ceilings_ms"] = {{"transfer", c.transfer_ms},
                            {"a_copy", c.a_copy_ms},
                            {"b_copy", c.b_copy_ms},
                            {"c", c.c_ms},
                            {"cost", c.cost_ms}};
        if (!c.hop_transfer_ms.empty()) j["ceilings_ms"]["hops"] = c.hop_transfer_ms;
    }
    for (std::size_t i = 0; i < kRunFigCount; ++i) {
        const FigureName& name = figure_name(static_cast<RunFig>(i));
        if (judged.run[i].measured()) j["figures"][name.name] = figure_json(judged.run[i], name);
    }
    if (const Figure& speedup = judged[RunFig::speedup]; speedup.measured()) {
        for (const Finding& note : judged.speedup_notes)
            j["figures"]["overlap_speedup"]["notes"].push_back(note.rule->code);
        j["overlap_speedup"] = speedup.rendered();
        j["overlap_speedup_includes_io"] = s.speedup_includes_io();
        j["overlap_ideal_ms"] = judged[RunFig::perfect_overlap].rendered();
    }
    if (judged[RunFig::attributed_step].measured()) {
        j["overlap_attribution_ms"] = {
            {"step", judged[RunFig::attributed_step].rendered()},
            {"perfect_overlap", judged[RunFig::attributed_perfect].rendered()},
            {"c_slowdown", judged[RunFig::c_slowdown].rendered()},
            {"transfer_slowdown", judged[RunFig::transfer_slowdown].rendered()},
            {"rest", judged[RunFig::rest].rendered()}};
    }
}

// Whether the phase times can be read, and where not, why (docs/OUTPUT.md says what it withholds).
nlohmann::json reading_json(const Judgement& judged) {
    nlohmann::json j = {{"readable", judged.readable()},
                        {"reasons", nlohmann::json::array()},
                        {"why", judged.text()}};
    for (const Finding& finding : judged.unreadable) j["reasons"].push_back(finding.rule->code);
    return j;
}

}  // namespace

std::string relay_json(const PassSummary& pass) {
    if (!pass.relay) return "null";
    const RelayFigures& relay = *pass.relay;
    nlohmann::ordered_json j;
    j["stages"] = relay.stages;
    j["period_ms"] = pass.time_per_step_ms;
    j["slowest_hop"] = slowest_hop(pass);
    j["slowest_hop_ms"] = slowest_hop_ms(pass);
    j["fill_ms"] = relay.fill_ms;
    j["stage_figures"] = nlohmann::ordered_json::array();
    for (const StageFigures& f : relay.stage_figures) {
        nlohmann::ordered_json stage = {{"group", f.group}, {"stage", f.stage}, {"rank", f.rank}};
        for (const Phase p :
             {Phase::step, Phase::a, Phase::recv, Phase::c, Phase::wait, Phase::b, Phase::send})
            stage[std::string(kPhases[index_of(p)].name) + "_ms"] = f.median(p);
        stage["host_us_per_step"] = {{"queue", f.host_queue_us},
                                     {"retire", f.host_retire_us},
                                     {"callback", f.host_callback_us}};
        stage["x_mismatches"] = f.x_mismatches;
        stage["c_mismatches"] = f.c_mismatches;
        j["stage_figures"].push_back(stage);
    }
    return j.dump();
}

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
    nlohmann::json j = {{"schema_version", kSummarySchemaVersion},
                        {"gpurelay_version", s.versions},
                        {"git_hash", s.git_hash},
                        {"timestamp", s.timestamp},
                        {"world_size", s.world_size},
                        {"pairs", s.pairs},
                        {"pattern", std::string(to_string(s.config.pattern))},
                        {"backend", s.backend},
                        {"transport", s.transport},
                        {"transport_note", s.transport_note},
                        {"host_wait", s.host_wait},
                        {"host_wait_reason", s.host_wait_reason}};
    if (s.config.pattern != Pattern::pairs) {
        j["groups"] = s.groups;
        j["group_size"] = s.group_size;
        j["bus_factor"] = bus_factor(s.config.pattern, s.group_size);
    }
    for (const auto& key : config_keys())
        j["config"][std::string(key.name)] = typed_value(config_value_toml(s.config, key.name));
    j["config_toml"] = config_to_toml(s.config);
    for (const RankInfo& r : s.ranks) j["ranks"].push_back(rank_json(r));
    const Judgement judged = judge(s);
    for (std::size_t i = 0; i < s.passes.size(); ++i)
        j["passes"].push_back(pass_json(s.passes[i], judged.passes[i]));
    add_overlap_figures(s, judged, j);
    j["waiting_cause"] = waiting_cause(s);
    j["phase_times"] = reading_json(judged);
    j["device_bytes"] = s.device_bytes;
    j["host_bytes"] = s.host_bytes;
    j["write_gbps"] = judged[RunFig::write_rate].rendered();
    j["verified"] = s.verified();
    return j.dump(2) + "\n";  // NaN, not JSON, is written as null
}

}  // namespace gpurelay
