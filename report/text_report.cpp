// The report rank 0 prints after the run, the judgement rendered; for several sizes, their table.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "report/number_text.hpp"
#include "report/render.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

std::string ms(double value) { return number_text("{:.4f}", value); }

// Why auto chose the pass's timing: " (auto: warm-up steps took 0.046 ms each, under 0.25 ms)".
std::string timing_reason(const PassSummary& p) {
    if (!p.timing_auto) return "";
    if (std::isnan(p.timing_judged_ms)) return " (auto: no warm-up step to judge from)";
    return fmt::format(" (auto: warm-up steps took {} ms each, {}under {} ms)",
                       number_text("{:.3f}", p.timing_judged_ms),
                       p.timing == "phases" ? "not " : "", number_text("{:g}", kTimingAutoBelowMs));
}

std::string shown(const Figure& f, double scale = 1) {
    return interval_text(scale * f.value, scale * f.lo, scale * f.hi);
}

void print_phase_table(std::FILE* out, const PassSummary& p, bool readable) {
    fmt::print(out, "\n{}: {} timed steps from step {}{}\n", pass_name(p.overlap), p.timed_steps,
               p.timed_from,
               readable ? " (ms; step = period between completed steps; p90, p99 as "
                          "numpy.percentile; cv = std / mean)"
                        : "");
    if (!readable) return;
    constexpr const char* kPhaseRow = "  {:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}\n";
    fmt::print(out, kPhaseRow, "phase", "median", "min", "max", "p90", "p99", "cv");
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        fmt::print(out, kPhaseRow, phase.name, ms(st.median), ms(st.min), ms(st.max), ms(st.p90),
                   ms(st.p99), number_text("{:.3f}", st.cv));
    }
}

// A rate as the rates' line gives it: "B 6.9 [6.7, 7.0] GB/s"; where a rule of its own withholds
// it, why; nothing where the phase times cannot be read (said once above).
void add_rate(std::vector<std::string>& parts, const std::string& label, const Figure& f,
              const char* unit) {
    if (f.shown()) parts.push_back(label + " " + shown(f) + " " + unit);
    if (f.withheld_by != nullptr && f.withheld_by->finding == nullptr) {
        parts.push_back(label == "=" ? "(no rate: " + f.why + ")"
                                     : label + ": no rate (" + f.why + ")");
    }
}

void print_rates(std::FILE* out, const RunSummary& s, const PassJudgement& j) {
    const Config& c = s.config;
    std::vector<std::string> parts;
    if (j[PassFig::handoff].shown()) {
        parts.push_back("hand-off " + shown(j[PassFig::handoff]) +
                        " µs (A writes straight into the peer's slot: no transfer to rate)");
    } else if (j[PassFig::transfer].shown()) {
        std::vector<std::string> rate;
        add_rate(rate, "=", j[PassFig::transfer_rate], "GB/s");
        parts.push_back("transfer " + shown(j[PassFig::transfer]) + " ms" +
                        (rate.empty() ? "" : " " + rate.front()));
    }
    add_rate(parts, c.launch == Launch::device ? "A reaches the peer at" : "A", j[PassFig::a_rate],
             "GB/s");
    add_rate(parts, "B", j[PassFig::b_rate], "GB/s");
    add_rate(parts, "C", j[PassFig::c_rate], "Giter/s");
    if (!parts.empty()) fmt::print(out, "  {}\n", fmt::join(parts, "; "));
    if (c.pattern != Pattern::pairs && c.pattern != Pattern::relay &&
        j[PassFig::bus_rate].shown()) {
        fmt::print(out,
                   "  {} (nccl-tests' conventions): algbw {} GB/s (bytes / time), busbw {} "
                   "GB/s (algbw x {})\n",
                   to_string(c.pattern), shown(j[PassFig::transfer_rate]),
                   shown(j[PassFig::bus_rate]),
                   number_text("{:.3f}", bus_factor(c.pattern, s.group_size)));
    }
}

void print_step(std::FILE* out, const RunSummary& s, const PassSummary& p, const PassJudgement& j) {
    const Figure& aggregate = j[PassFig::aggregate_rate];
    fmt::print(out,
               "  time per step {} ms (the median period; mean {} ms, {} steps/s){}; cold first "
               "step {} ms\n",
               shown(j[PassFig::time_per_step]), shown(j[PassFig::mean_step]),
               number_text("{:.1f}", j[PassFig::steps_per_s].value),
               aggregate.shown() ? "; aggregate " + shown(aggregate) + " GB/s" : "",
               number_text("{:.3f}", p.cold_step_ms));
    // With launch = device the roles run every step; the host only feeds C, copies y out and votes.
    const std::string queued =
        s.config.launch == Launch::device
            ? "nothing queued (launch = device)"
            : fmt::format("queueing {}, reading back {} (waits for the {})",
                          duration_text_us(p.host_queue_us), duration_text_us(p.host_retire_us),
                          s.backend == "cuda" ? "GPU" : "host streams");
    fmt::print(out,
               "  host per step (the longest rank for each): {}, stop vote {} (waits for the "
               "other ranks)\n",
               queued, duration_text_us(p.host_callback_us));
}

void print_ceilings(std::FILE* out, const RunSummary& s, const PassJudgement& j) {
    const Ceilings& c = s.ceilings;
    struct Ratio {
        PassFig figure;
        const char* phase;
        std::string against;
    };
    const Ratio ratios[] = {{PassFig::transfer_vs_ceiling, "transfer",
                             "the bare transfer (" + ms(c.transfer_ms) + " ms)"},
                            {PassFig::a_vs_copy, "A", "a copy"},
                            {PassFig::b_vs_copy, "B", "a copy"},
                            {PassFig::c_vs_alone, "C", "C alone (" + ms(c.c_ms) + " ms)"}};
    std::vector<std::string> parts;
    for (const Ratio& r : ratios)
        if (j[r.figure].shown())
            parts.push_back(fmt::format("{} {:.2f} of {}", r.phase, j[r.figure].value, r.against));
    if (!c.measured || parts.empty()) return;
    fmt::print(out, "  against this launch's ceilings (measured alone, {:.1f} ms): {}\n", c.cost_ms,
               fmt::join(parts, "; "));
}

void print_timing(std::FILE* out, const RunSummary& s, const PassSummary& p,
                  const PassJudgement& j) {
    const Config& c = s.config;
    if (c.launch == Launch::device) {
        fmt::print(out,
                   "  timing: every step stamped on the device's clock by its roles (launch = "
                   "device); {} of {} timed steps carry phase times\n",
                   p.phase_timed_steps, p.timed_steps);
    } else {
        fmt::print(out,
                   "  timing {}{}; {} of {} timed steps carry phase times, {} in retire groups (up "
                   "to {} steps share one end event, each the group's period over its steps)\n",
                   p.timing, timing_reason(p), p.phase_timed_steps, p.timed_steps, p.grouped_steps,
                   p.retire_group_steps);
    }
    // An estimate, not a bound: the medians are of phases that ran beside each other (and
    // slowed each other down), so a step can take less than their sum.
    if (const Figure& model = j[PassFig::step_model]; model.shown() && model.value > 0) {
        fmt::print(out,
                   "  step model {} ms = {} of the phase medians (an estimate: phases that "
                   "run together slow each other, so a step may beat it); time per step {}x that\n",
                   ms(model.value), step_bound_formula(c.depth, p.overlap),
                   number_text("{:.2f}", p.time_per_step_ms / model.value));
    }
    if (c.graphs) {
        fmt::print(out,
                   "  graphs: {} captured in {:.1f} ms (after the cold step, untimed), {} steps "
                   "replayed\n",
                   p.graphs_captured, p.capture_ms, p.graph_steps);
    }
}

void print_attribution(std::FILE* out, const RunSummary& s, const Judgement& j) {
    const Figure& step = j[RunFig::attributed_step];
    if (step.shown()) {
        fmt::print(out,
                   "  overlap, attributed: step {:.4f} ms = perfect overlap {:.4f} + C slower "
                   "beside the transfer {:+.4f} + the transfer slower beside C, A and B {:+.4f} + "
                   "the rest (ordering, launches, the host) {:+.4f}\n",
                   step.value, j[RunFig::attributed_perfect].value, j[RunFig::c_slowdown].value,
                   j[RunFig::transfer_slowdown].value, j[RunFig::rest].value);
    } else if (step.withheld_by == &rule("not_explained")) {
        const std::string cause = waiting_cause(s);
        fmt::print(out,
                   "  overlap, not attributed: the phase medians against the ceilings cannot "
                   "explain the overlapped step {:.4f} ms ({}){}{}\n",
                   step.value, step.why, cause.empty() ? "" : "; ", cause);
    }
}

void print_overlap(std::FILE* out, const RunSummary& s, const Judgement& j) {
    const Figure& speedup = j[RunFig::speedup];
    if (!speedup.measured()) return;
    std::string verdict = "withheld (" + speedup.why + ": " + speedup.reason() + ")";
    if (speedup.shown()) {
        verdict = fmt::format("{:.2f}× [{:.2f}, {:.2f}]", speedup.value, speedup.lo, speedup.hi);
        for (const Finding& note : j.speedup_notes)
            if (note.rule == &rule("no_difference")) verdict += ", " + note.text;
    }
    fmt::print(out, "\noverlap speedup: {} (time per step {} ms without overlap, {} ms with)\n",
               verdict, shown(j.passes.front()[PassFig::time_per_step]),
               shown(j.passes.back()[PassFig::time_per_step]));
    std::vector<std::string> unsettled;
    for (const Finding& note : j.speedup_notes)
        if (note.rule != &rule("no_difference")) unsettled.push_back(note.text);
    if (!unsettled.empty()) {
        fmt::print(out,
                   "  {}: one launch cannot settle it; scripts/sweep --repeat 6, then "
                   "scripts/compare\n",
                   fmt::join(unsettled, ", and "));
    }
    if (const Figure& perfect = j[RunFig::perfect_overlap]; perfect.shown()) {
        const double step = s.passes.back().time_per_step_ms;
        fmt::print(out,
                   "  perfect overlap: {} ms per step = {} of the overlap=off medians{}; "
                   "overlapped step {}x that\n",
                   ms(perfect.value), step_bound_formula(s.config.depth, true),
                   s.ceilings.measured ? ", the transfer and C at their ceilings" : "",
                   number_text("{:.2f}", step / perfect.value));
    }
    print_attribution(out, s, j);
    if (s.speedup_includes_io()) {
        fmt::print(out,
                   "  note: only the overlap-on pass writes /y, and it waited {:.1f} ms on the "
                   "file writer, so this speedup includes I/O; compare with --write last or none\n",
                   s.passes.back().write_wait_ms);
    }
}

void print_verdict(std::FILE* out, const RunSummary& s, const Judgement& j) {
    const Config& c = s.config;
    const VerificationTotals v = s.verification_totals();
    fmt::print(out,
               "verification: x {} elements checked, {} wrong; C {} checked, {} wrong; "
               "host spot check {} samples, {} wrong: {}\n",
               v.x_checked, v.x_mismatches, v.c_checked, v.c_mismatches, v.spot_checked,
               v.spot_mismatches, s.verified() ? "PASSED" : "FAILED");
    if (c.write == WriteMode::none) {
        fmt::print(out, "output: {} (write = none: no rows of /y)\n", c.output);
        return;
    }
    const Figure& write = j[RunFig::write_rate];
    fmt::print(out, "output: {} ({}the pipeline waited {} ms on the writer)\n", c.output,
               write.shown() ? "write " + number_text("{:.2f}", write.value) + " GB/s; " : "",
               number_text("{:.1f}", s.main_pass().write_wait_ms));
}

void print_reading(std::FILE* out, const RunSummary& s, const Judgement& j) {
    if (j.readable()) return;
    fmt::print(out,
               "\nphase times: cannot be read here ({})\n  so the report shows no phase table and "
               "no rate; the raw figures are in {} and the file (/timings); the time per step, "
               "its stability, the overlap speedup and verification stand\n",
               j.text(),
               s.config.summary_json.empty()
                   ? "the JSON summary, with each figure's verdict (--summary-json),"
                   : s.config.summary_json + " (phases_ms, and each figure's value under figures)");
}

// busbw is nccl-tests' bus bandwidth: for an all-reduce algbw x 2(n-1)/n, otherwise algbw.
constexpr const char* kRow = "{:>4} {:>12} {:>11} {:>24} {:>11} {:>9} {:>9} {:>9} {:>20} {:>9}\n";

void print_table_head(std::FILE* out, const RunSummary& first) {
    fmt::print(out,
               "\nsizes in one launch ({}): time per step is the median period with its 95% "
               "interval, the transfer its median, over each size's timed steps ({} pass)\n",
               config_value_text(first.config, "dtype"),
               first.passes.empty() || first.main_pass().overlap ? "overlap-on" : "overlap-off");
    fmt::print(out, fmt::runtime(kRow), "#", "size", "elements", "time/step", "transfer", "algbw",
               "busbw", "transfer", "overlap speedup", "verified");
    fmt::print(out, fmt::runtime(kRow), "#", "(B)", "", "(us)", "(us)", "(GB/s)", "(GB/s)",
               "/ceiling", "", "");
}

void print_unreadable_sizes(std::FILE* out, const std::vector<Judgement>& judged,
                            std::size_t first) {
    std::vector<int> rows;
    std::string why;
    for (std::size_t i = 0; i < judged.size(); ++i) {
        if (judged[i].readable()) continue;
        rows.push_back(static_cast<int>(first + i));
        if (why.empty()) why = judged[i].text();
    }
    if (rows.empty()) return;
    fmt::print(out,
               "phase times cannot be read for size(s) {} (size {}: {}): their transfer, its "
               "rates and its ceiling ratio are left out (the JSON's figures say why)\n",
               range_list_text(rows), rows.front(), why);
}

// --- The links and a relay's stages at any rank count (render.hpp's kLinksListed) ----------------

std::string link_name(Pattern pattern) {
    return pattern == Pattern::pairs ? "pair" : pattern == Pattern::relay ? "hop" : "group";
}

// A link's place: "rank 2 (vm host CPU) -> rank 3 (vm host CPU) over host memory (CPU path)".
std::string link_place(const RunSummary& s, const PairFigures& f) {
    auto place = [&](int r) {
        if (r < 0 || static_cast<std::size_t>(r) >= s.ranks.size()) return std::string("?");
        const RankInfo& info = s.ranks[static_cast<std::size_t>(r)];
        return info.host + " " + info.device + (info.bus_id.empty() ? "" : " " + info.bus_id);
    };
    const bool point_to_point =
        s.config.pattern == Pattern::pairs || s.config.pattern == Pattern::relay;
    const std::string link =
        f.producer >= 0 && static_cast<std::size_t>(f.producer) < s.ranks.size()
            ? s.ranks[static_cast<std::size_t>(f.producer)].peer_link
            : "?";
    return fmt::format("rank {} ({}) {} rank {} ({}) over {}", f.producer, place(f.producer),
                       point_to_point ? "->" : "to", f.consumer, place(f.consumer), link);
}

// A relay's hop names the stages it joins: "hop 2 (stage 2 -> 3 of group 0)".
std::string link_label(const RunSummary& s, const PairFigures& f) {
    const std::string name = link_name(s.config.pattern) + " " + std::to_string(f.pair);
    if (s.config.pattern != Pattern::relay || s.group_size < 2) return name;
    const int hops = s.group_size - 1;
    return fmt::format("{} (stage {} -> {} of group {})", name, f.pair % hops, f.pair % hops + 1,
                       f.pair / hops);
}

// Each hop's transfer over its bare one: a line each up to kLinksListed, else median and extremes.
void print_hop_ceilings(std::FILE* out, const PassSummary& pass, const PassJudgement& judged) {
    std::vector<double> ratios;
    for (const Figure& hop : judged.hops) {
        if (!hop.shown()) return;
        ratios.push_back(hop.value);
    }
    if (ratios.size() > kLinksListed) {
        const PhaseStats st = phase_stats(ratios);
        auto hop_of = [&](double ratio) {
            const auto at = std::find(ratios.begin(), ratios.end(), ratio);
            return pass.pairs[static_cast<std::size_t>(at - ratios.begin())].pair;
        };
        fmt::print(out,
                   "  {} hops against their bare transfers: median {:.2f} of their speed, min "
                   "{:.2f} (hop {}), max {:.2f} (hop {})\n",
                   ratios.size(), st.median, st.min, hop_of(st.min), st.max, hop_of(st.max));
        return;
    }
    for (std::size_t h = 0; h < ratios.size(); ++h) {
        const PairFigures& f = pass.pairs[h];
        fmt::print(out,
                   "  hop {} against its ceiling: transfer {} ms, bare {} ms ({:.2f} of its "
                   "speed)\n",
                   f.pair, ms(f.transfer_ms), ms(f.transfer_ms * ratios[h]), ratios[h]);
    }
}

std::string stage_line(const StageFigures& f, bool phases) {
    return fmt::format(
        "  stage {} of group {} (rank {}): step {} ms; {}host per step: queueing {}, reading back "
        "{}, stop vote {}; wrong: {} in x, {} in C",
        f.stage, f.group, f.rank, ms(f.median(Phase::step)),
        phases ? fmt::format("A {}, recv {}, C {}, wait {}, B {}, send {} ms; ",
                             ms(f.median(Phase::a)), ms(f.median(Phase::recv)),
                             ms(f.median(Phase::c)), ms(f.median(Phase::wait)),
                             ms(f.median(Phase::b)), ms(f.median(Phase::send)))
               : "",
        duration_text_us(f.host_queue_us), duration_text_us(f.host_retire_us),
        duration_text_us(f.host_callback_us), f.x_mismatches, f.c_mismatches);
}

// Beyond kLinksListed stages: their periods, the slowest and those that counted a wrong element.
void print_stages(std::FILE* out, const RelayFigures& relay, bool phases) {
    const std::vector<StageFigures>& stages = relay.stage_figures;
    if (stages.size() <= kLinksListed) {
        for (const StageFigures& f : stages) fmt::print(out, "{}\n", stage_line(f, phases));
        return;
    }
    std::vector<double> steps;
    std::vector<const StageFigures*> slowest, wrong;
    for (const StageFigures& f : stages) {
        steps.push_back(f.median(Phase::step));
        slowest.push_back(&f);
        if (f.x_mismatches + f.c_mismatches > 0) wrong.push_back(&f);
    }
    const PhaseStats st = phase_stats(steps);
    std::stable_sort(slowest.begin(), slowest.end(), [](const auto* a, const auto* b) {
        return a->median(Phase::step) > b->median(Phase::step);
    });
    slowest.resize(std::min(slowest.size(), kSlowestNamed));
    fmt::print(out,
               "  {} stages (one a line up to {}): step median {} ms, min {}, max {}; the {} "
               "slowest:\n",
               stages.size(), kLinksListed, ms(st.median), ms(st.min), ms(st.max), slowest.size());
    for (const StageFigures* f : slowest) fmt::print(out, "  {}\n", stage_line(*f, phases));
    if (wrong.empty()) return;
    fmt::print(out, "  {} stage(s) counted wrong elements{}:\n", wrong.size(),
               wrong.size() > kSlowestNamed ? fmt::format(", the first {}", kSlowestNamed) : "");
    wrong.resize(std::min(wrong.size(), kSlowestNamed));
    for (const StageFigures* f : wrong) fmt::print(out, "  {}\n", stage_line(*f, phases));
}

void print_links(std::FILE* out, const RunSummary& s, const PassSummary& p,
                 const PassJudgement& judged) {
    const std::string name = link_name(s.config.pattern);
    const std::string slow_note =
        fmt::format("  SLOW: over {:g}% slower than the median {}", 100 * kSlowPairMargin, name);
    const bool transfers = judged[PassFig::transfer].shown();
    auto line = [&](std::size_t i, const std::string& flag) {
        const PairFigures& f = p.pairs[i];
        const Figure& rate = judged.links[i];
        return fmt::format(
            "  {}: {}: {}step {} ms{}{}", link_label(s, f), link_place(s, f),
            rate.shown() ? number_text("{:.2f}", rate.value) + " GB/s, " : "", ms(f.step_ms),
            transfers ? " (transfer " + ms(f.transfer_ms) + " ms)" : "", f.slow ? flag : "");
    };
    if (p.pairs.size() <= 1) return;
    if (p.pairs.size() <= kLinksListed) {
        for (std::size_t i = 0; i < p.pairs.size(); ++i)
            fmt::print(out, "{}\n", line(i, slow_note));
        return;
    }
    const LinkSpread spread = link_spread(p.pairs);
    // The value and the first link that has it: "0.0011 (pair 3)".
    auto extreme = [&](double value, double PairFigures::*field) {
        const auto at = std::find_if(p.pairs.begin(), p.pairs.end(),
                                     [&](const PairFigures& f) { return f.*field == value; });
        return fmt::format("{} ({} {})", ms(value), name, at == p.pairs.end() ? -1 : at->pair);
    };
    fmt::print(out, "  {} {}s (one a line up to {}): {}step median {} ms, min {}, max {}\n",
               spread.count, name, kLinksListed,
               transfers ? fmt::format("transfer median {} ms, min {}, max {}; ",
                                       ms(spread.transfer.median),
                                       extreme(spread.transfer.min, &PairFigures::transfer_ms),
                                       extreme(spread.transfer.max, &PairFigures::transfer_ms))
                         : "",
               ms(spread.step.median), extreme(spread.step.min, &PairFigures::step_ms),
               extreme(spread.step.max, &PairFigures::step_ms));
    fmt::print(out,
               "  the {} slowest; {} of {} flagged SLOW (over {:g}% slower than the median {}):\n",
               spread.slowest.size(), spread.flagged, spread.count, 100 * kSlowPairMargin, name);
    for (const std::size_t i : spread.slowest) fmt::print(out, "  {}\n", line(i, "  SLOW"));
}

void print_relay(std::FILE* out, const PassSummary& pass, const PassJudgement& judged) {
    if (!pass.relay) return;
    const RelayFigures& relay = *pass.relay;
    const int hop = slowest_hop(pass);
    std::string slowest = "no hop timed";
    if (hop >= 0) {
        const PairFigures& h = pass.pairs[static_cast<std::size_t>(hop)];
        const int hops = std::max(relay.stages - 1, 1);
        const Figure& over = judged[PassFig::relay_period_over_hop];
        slowest = fmt::format(
            "hop {}, stage {} -> {} of group {} (ranks {} -> {}){}{}", h.pair, h.pair % hops,
            h.pair % hops + 1, h.pair / hops, h.producer, h.consumer,
            judged[PassFig::transfer].shown() ? ": transfer " + ms(h.transfer_ms) + " ms" : "",
            over.shown() ? fmt::format(", the period {:.2f}x that", over.value) : "");
    }
    fmt::print(out,
               "  relay of {} stages: period {} ms; slowest hop: {}; fill latency {} ms (the first "
               "timed tensor, from every rank idle to the last stage's B)\n",
               relay.stages, ms(pass.time_per_step_ms), slowest, ms(relay.fill_ms));
}

void print_relay_stages(std::FILE* out, const PassSummary& pass, const PassJudgement& judged,
                        bool readable) {
    if (!pass.relay) return;
    print_hop_ceilings(out, pass, judged);
    print_stages(out, *pass.relay, readable);
}

}  // namespace

void print_report(std::FILE* out, const RunSummary& s) {
    const Judgement j = judge(s);
    print_reading(out, s, j);
    bool causes_said = false;
    for (std::size_t i = 0; i < s.passes.size(); ++i) {
        const PassSummary& p = s.passes[i];
        const PassJudgement& pj = j.passes[i];
        print_phase_table(out, p, j.readable());
        print_rates(out, s, pj);
        print_step(out, s, p, pj);
        print_ceilings(out, s, pj);
        print_stability(out, s, p, causes_said);
        print_timing(out, s, p, pj);
        print_relay(out, p, pj);
        // The links (and a relay's stages) of the main pass only: the JSON has every pass's.
        if (&p != &s.main_pass()) continue;
        print_links(out, s, p, pj);
        print_relay_stages(out, p, pj, j.readable());
    }
    print_overlap(out, s, j);
    print_verdict(out, s, j);
    std::fflush(out);
}

void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first) {
    if (sizes.empty()) return;
    print_table_head(out, sizes.front());
    bool verified = true;
    std::vector<Judgement> judged;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const RunSummary& s = sizes[i];
        judged.push_back(judge(s));
        const PassJudgement& j = judged.back().passes.back();
        const Figure& step = j[PassFig::time_per_step];
        const Figure& speedup = judged.back()[RunFig::speedup];
        verified = verified && s.verified();
        fmt::print(out, fmt::runtime(kRow), first + i, s.config.tensor_bytes(), s.config.elements,
                   shown(step, 1e3), number_text("{:.2f}", 1e3 * j[PassFig::transfer].rendered()),
                   number_text("{:.2f}", j[PassFig::transfer_rate].rendered()),
                   number_text("{:.2f}", j[PassFig::bus_rate].rendered()),
                   number_text("{:.3f}", j[PassFig::transfer_vs_ceiling].rendered()),
                   speedup.shown() ? shown(speedup) : "-", s.verified() ? "PASSED" : "FAILED");
    }
    print_unreadable_sizes(out, judged, first);
    if (first > 0) {
        fmt::print(out,
                   "sizes 0 to {} ran before the stop: their figures are in the file "
                   "(/cases/N), not in this table\n",
                   first - 1);
    }
    const RunSummary& last = sizes.back();
    fmt::print(out, "output: {} (one group per size, /cases/0 to /cases/{})\n", last.config.output,
               first + sizes.size() - 1);
    fmt::print(out, "verification of the sizes above: {}\n", verified ? "PASSED" : "FAILED");
    std::fflush(out);
}

LinkSpread link_spread(const std::vector<PairFigures>& links) {
    LinkSpread spread;
    spread.count = links.size();
    if (links.empty()) return spread;
    std::vector<double> transfers, steps;
    for (const PairFigures& f : links) {
        transfers.push_back(f.transfer_ms);
        steps.push_back(f.step_ms);
        spread.flagged += f.slow ? 1 : 0;
    }
    spread.transfer = phase_stats(transfers);
    spread.step = phase_stats(steps);
    // How much slower than the median link, the larger of its transfer's and its step's: the
    // measure kSlowPairMargin flags by, so the flagged links come first.
    auto slowness = [&](const PairFigures& f) {
        return std::fmax(f.transfer_ms / spread.transfer.median, f.step_ms / spread.step.median);
    };
    std::vector<std::size_t> order(links.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return slowness(links[a]) > slowness(links[b]);
    });
    order.resize(std::min(order.size(), kSlowestNamed));
    spread.slowest = order;
    return spread;
}

}  // namespace gpurelay
