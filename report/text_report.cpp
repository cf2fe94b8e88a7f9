// The report rank 0 prints: the run's header before the steps (what runs where, with how much
// memory), then each pass's phases and rates, verification and the verdict.
#include <cmath>
#include <cstdio>
#include <string>

#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

// The width the wrapped lines (config) keep to.
constexpr std::size_t kReportColumns = 100;

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u])
                  : fmt::format("{:.2f} {}", bytes, units[u]);
}

std::string human_bytes(std::uint64_t bytes) { return human_bytes(static_cast<double>(bytes)); }

const char* pass_name(bool overlap) { return overlap ? "overlap=on" : "overlap=off"; }

// Why auto chose the pass's timing: " (auto: warm-up steps took 0.046 ms each, under 0.25 ms)".
std::string timing_reason(const PassSummary& p) {
    if (!p.timing_auto) return "";
    if (std::isnan(p.timing_judged_ms)) return " (auto: no warm-up step to judge from)";
    std::string reason = " (auto: warm-up steps took ";
    reason += number_text("{:.3f}", p.timing_judged_ms);
    reason += p.timing == "phases" ? " ms each, not under " : " ms each, under ";
    reason += number_text("{:g}", kTimingAutoBelowMs);
    reason += " ms)";
    return reason;
}

// "config: key=value ..." wrapped at kReportColumns, the lines after the first indented.
std::string wrapped_config(const Config& config) {
    std::string text = "config:", line = text;
    for (const auto& key : config_keys()) {
        const std::string item = std::string(key.name) + '=' + config_value_toml(config, key.name);
        if (line.size() + 1 + item.size() > kReportColumns && line.size() > 2) {
            text += "\n  ";
            line = "  ";
        } else {
            text += ' ';
            line += ' ';
        }
        text += item;
        line += item;
    }
    return text;
}

// Whether C ran at all (c_elements or c_iterations 0 turn it off).
bool c_runs(const Config& c) { return c.c_elements > 0 && c.c_iterations > 0; }

void print_phase_table(std::FILE* out, const PassSummary& p) {
    fmt::print(out,
               "\n{}: {} timed steps from step {} (ms; step = period between completed "
               "steps; p90, p99 as numpy.percentile; cv = std / mean)\n",
               pass_name(p.overlap), p.timed_steps, p.timed_from);
    fmt::print(out, "  {:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}\n", "phase", "median", "min",
               "max", "p90", "p99", "cv");
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        fmt::print(out, "  {:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}\n", phase.name,
                   number_text("{:.4f}", st.median), number_text("{:.4f}", st.min),
                   number_text("{:.4f}", st.max), number_text("{:.4f}", st.p90),
                   number_text("{:.4f}", st.p99), number_text("{:.3f}", st.cv));
    }
    std::string numbers;
    for (const std::int64_t step : p.slow_step_numbers) {
        numbers += (numbers.empty() ? " (steps " : ", ") + std::to_string(step);
    }
    if (p.slow_steps > static_cast<std::int64_t>(p.slow_step_numbers.size())) numbers += ", ...";
    fmt::print(out, "  slow steps (a period over {:g}x the median): {}{}\n", kSlowStepFactor,
               p.slow_steps, (numbers + (numbers.empty() ? "" : ")")));
}

void print_rates(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    const Config& c = s.config;
    // A transfer that measured waiting is kept out of the bandwidth figures.
    const std::string transfer_rate = transfer_is_waiting(s, p)
                                          ? "waiting, not moving (no bandwidth)"
                                          : number_text("{:.2f}", p.transfer_gbps) + " GB/s";
    fmt::print(out, "  transfer {} ms = {}; A {} GB/s; B {} GB/s{}\n",
               number_text("{:.4f}", p.transfer_ms), transfer_rate, number_text("{:.1f}", p.a_gbps),
               number_text("{:.1f}", p.b_gbps),
               c_runs(c) ? ("; C " + number_text("{:.2f}", p.c_giter_per_s) + " Giter/s") : "");
    if (c.pattern != Pattern::pairs && c.pattern != Pattern::relay) {
        fmt::print(out,
                   "  {} (nccl-tests' conventions): algbw {} GB/s (bytes / time), busbw {} "
                   "GB/s (algbw x {})\n",
                   to_string(c.pattern), number_text("{:.2f}", p.transfer_gbps),
                   number_text("{:.2f}", p.bus_gbps),
                   number_text("{:.3f}", bus_factor(c.pattern, s.group_size)));
    }
    fmt::print(out,
               "  time per step {} ms ({} steps/s, aggregate {} GB/s); cold first step {} ms\n",
               number_text("{:.4f}", p.time_per_step_ms), number_text("{:.1f}", p.steps_per_s),
               number_text("{:.2f}", p.aggregate_gbps), number_text("{:.3f}", p.cold_step_ms));
    fmt::print(out,
               "  host per step (the longest rank for each): queueing {}, reading back {} "
               "(waits for the {}), stop vote {} (waits for the other ranks)\n",
               duration_text_us(p.host_queue_us), duration_text_us(p.host_retire_us),
               s.backend == "cuda" ? "GPU" : "host streams", duration_text_us(p.host_callback_us));
}

void print_timing(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    const Config& c = s.config;
    fmt::print(out,
               "  timing {}{}; {} of {} timed steps carry phase times, {} share an end "
               "event (groups of up to {}, each step the group's period over its steps)\n",
               p.timing, timing_reason(p), p.phase_timed_steps, p.timed_steps, p.grouped_steps,
               p.retire_group_steps);
    // An estimate, not a bound: the medians are of phases that ran beside each other (and
    // slowed each other down), so a step can take less than their sum.
    if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0 && !step_model_explains(p)) {
        const std::string cause = waiting_cause(s);
        fmt::print(out,
                   "  step model {} ms = {} of the phase medians: the measured step ({} ms) "
                   "beats it {}x, so the phase medians cannot explain the step{}{}\n",
                   number_text("{:.4f}", p.step_bound_ms), step_bound_formula(c.depth, p.overlap),
                   number_text("{:.4f}", p.time_per_step_ms),
                   number_text("{:.2f}", p.step_bound_ms / p.time_per_step_ms),
                   cause.empty() ? "" : ": ", cause);
    } else if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0) {
        fmt::print(out,
                   "  step model {} ms = {} of the phase medians (an estimate: phases that "
                   "run together slow each other, so a step may beat it); time per step {}x "
                   "that\n",
                   number_text("{:.4f}", p.step_bound_ms), step_bound_formula(c.depth, p.overlap),
                   number_text("{:.2f}", p.time_per_step_ms / p.step_bound_ms));
    }
    if (c.graphs) {
        fmt::print(out,
                   "  graphs: {} captured in {:.1f} ms (after the cold step, untimed), {} steps "
                   "replayed\n",
                   p.graphs_captured, p.capture_ms, p.graph_steps);
    }
}

// "host GPU busid" of rank r, as the header names it ("?" where the ranks were not gathered).
std::string rank_place(const RunSummary& s, int r) {
    if (r < 0 || static_cast<std::size_t>(r) >= s.ranks.size()) return "?";
    const RankInfo& info = s.ranks[static_cast<std::size_t>(r)];
    return info.host + " " + info.device + (info.bus_id.empty() ? "" : " " + info.bus_id);
}

void print_pairs(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    if (p.pairs.size() <= 1) return;
    const bool pairs = s.config.pattern == Pattern::pairs;
    const bool links = pairs || s.config.pattern == Pattern::relay;  // a relay's lines are hops
    const char* unit = pairs ? "pair" : links ? "hop" : "group";
    const std::string slow_note = "  SLOW: over " + number_text("{:g}", 100 * kSlowPairMargin) +
                                  "% slower than the median " + unit;
    for (const PairFigures& f : p.pairs) {
        const std::string link =
            f.producer >= 0 && static_cast<std::size_t>(f.producer) < s.ranks.size()
                ? s.ranks[static_cast<std::size_t>(f.producer)].peer_link
                : "?";
        fmt::print(out,
                   "  {} {}: rank {} ({}) {} rank {} ({}) over {}: {} GB/s, step {} ms "
                   "(transfer {} ms){}\n",
                   unit, f.pair, f.producer, rank_place(s, f.producer), links ? "->" : "to",
                   f.consumer, rank_place(s, f.consumer), link,
                   number_text("{:.2f}", f.transfer_gbps), number_text("{:.4f}", f.step_ms),
                   number_text("{:.4f}", f.transfer_ms), f.slow ? slow_note : "");
    }
}

// One "perfect overlap" figure: with the ceilings, the one the attribution starts from (the
// transfer and C at their ceilings); without, the overlapped model of the overlap=off medians.
void print_overlap(std::FILE* out, const RunSummary& s) {
    if (s.overlap_speedup <= 0) return;
    const double step = s.passes.back().time_per_step_ms;
    fmt::print(out,
               "\noverlap speedup: {:.3f}x (time per step {} ms without overlap, {} ms with)\n",
               s.overlap_speedup, number_text("{:.4f}", s.passes.front().time_per_step_ms),
               number_text("{:.4f}", step));
    const OverlapAttribution a = attribute_overlap(s);
    const double perfect = a.measured ? a.perfect_ms : s.overlap_ideal_ms;
    const std::string beaten =
        kModelBeatenFactor * step <= perfect
            ? "; the overlapped step beats it " + number_text("{:.2f}", perfect / step) +
                  "x, so it models nothing here" +
                  (waiting_cause(s).empty() ? "" : " (" + waiting_cause(s) + ")")
            : "; overlapped step " + number_text("{:.2f}", step / perfect) + "x that";
    fmt::print(out, "  perfect overlap: {} ms per step = {} of the overlap=off medians{}{}\n",
               number_text("{:.4f}", perfect), step_bound_formula(s.config.depth, true),
               a.measured ? ", the transfer and C at their ceilings" : "", beaten);
    if (s.speedup_includes_io()) {
        fmt::print(out,
                   "  note: only the overlap-on pass writes /y, and it waited {:.1f} ms on the "
                   "file writer, so this speedup includes I/O; compare with --write last or "
                   "none\n",
                   s.passes.back().write_wait_ms);
    }
}

void print_verdict(std::FILE* out, const RunSummary& s) {
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
    fmt::print(out, "output: {} (write {} GB/s; the pipeline waited {} ms on the writer)\n",
               c.output, number_text("{:.2f}", s.write_gbps),
               number_text("{:.1f}", s.main_pass().write_wait_ms));
}

}  // namespace

std::string duration_text_us(double us) {
    if (std::isnan(us)) return "-";
    if (us < 1000.0) return number_text("{:.1f}", us) + " µs";
    if (us < 1e6) return number_text("{:.2f}", us / 1e3) + " ms";
    return number_text("{:.2f}", us / 1e6) + " s";
}

std::string memory_text(const RunSummary& s) {
    const Config& c = s.config;
    // A run of several sizes makes its slots for the largest.
    const std::string slots = "tensor slots of " + human_bytes(c.largest().tensor_bytes()) +
                              (c.several_sizes() ? " (the largest size)" : "") + ", 2 x " +
                              std::to_string(c.depth) + " on a consumer and " +
                              std::to_string(c.depth) + " on a producer";
    const std::string c_buffer = c_runs(c) ? "; C's " + human_bytes(c.c_elements * 4) : "";
    if (s.backend == "cuda") {
        return "memory per rank (largest): device " + human_bytes(s.device_bytes) + " (" + slots +
               c_buffer + "); pinned host " + human_bytes(s.host_bytes) +
               " (the writer's buffers and the mismatch counters)";
    }
    // The CPU path holds everything in host memory: one figure, the largest rank's whole.
    return "memory per rank (largest): host " + human_bytes(s.total_bytes) + " (" + slots +
           c_buffer + "; the writer's buffers and the mismatch counters)";
}

void print_run_header(std::FILE* out, const RunSummary& s) {
    const Config& c = s.config;
    const std::string layout = c.pattern == Pattern::pairs
                                   ? std::to_string(s.pairs) + " pair(s)"
                                   : std::string(to_string(c.pattern)) + " in " +
                                         std::to_string(s.groups) + " group(s) of " +
                                         std::to_string(s.group_size);
    fmt::print(out, "gpurelay: {} rank(s), {}, {} path, transport {}{}{}\n", s.world_size, layout,
               s.backend, s.transport,
               s.transport_note.empty() ? "" : (" (" + s.transport_note + ")"),
               c.graphs ? ", graphs on" : "");
    fmt::print(out, "{}\n", wrapped_config(c));
    fmt::print(out, "versions: {}\n", s.versions);
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& info = s.ranks[r];
        // For a collective, `pair` is the rank's row of /y (receivers, or every rank).
        const std::string placement = placement_text(info);
        fmt::print(out, "rank {}: {} {} {} on {}, {}{}{}; to its peer: {}{}{}\n", r,
                   c.pattern == Pattern::pairs ? "pair" : "row", info.pair, info.role, info.host,
                   info.device, info.bus_id.empty() ? "" : " ", info.bus_id, info.peer_link,
                   placement.empty() ? "" : "; ", placement);
    }
    print_placement_notes(out, s);
    if (!s.host_wait.empty()) {
        fmt::print(out, "host waits: {} ({})\n", s.host_wait, s.host_wait_reason);
    }
    fmt::print(out, "{}\n", memory_text(s));
    std::fflush(out);
}

void print_report(std::FILE* out, const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        print_phase_table(out, p);
        print_rates(out, s, p);
        print_ceilings(out, s, p);
        print_stability(out, s, p);
        print_timing(out, s, p);
        print_pairs(out, s, p);
        print_relay(out, s, p);
    }
    print_overlap(out, s);
    print_overlap_attribution(out, s);
    print_verdict(out, s);
    std::fflush(out);
}

}  // namespace gpurelay
