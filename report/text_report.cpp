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
    char text[64];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return text;
}

std::string human_bytes(std::uint64_t bytes) { return human_bytes(static_cast<double>(bytes)); }

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
    std::fprintf(out,
                 "\n%s: %lld timed steps from step %lld (ms; step = period between completed "
                 "steps; p90, p99 as numpy.percentile; cv = std / mean)\n",
                 pass_name(p.overlap), static_cast<long long>(p.timed_steps),
                 static_cast<long long>(p.timed_from));
    std::fprintf(out, "  %-6s %10s %10s %10s %10s %10s %6s\n", "phase", "median", "min", "max",
                 "p90", "p99", "cv");
    for (const PhaseInfo& phase : kPhases) {
        const PhaseStats& st = p.phase(phase.phase);
        std::fprintf(out, "  %-6s %10s %10s %10s %10s %10s %6s\n", phase.name,
                     fmt("%.4f", st.median).c_str(), fmt("%.4f", st.min).c_str(),
                     fmt("%.4f", st.max).c_str(), fmt("%.4f", st.p90).c_str(),
                     fmt("%.4f", st.p99).c_str(), fmt("%.3f", st.cv).c_str());
    }
    std::string numbers;
    for (const std::int64_t step : p.slow_step_numbers) {
        numbers += (numbers.empty() ? " (steps " : ", ") + std::to_string(step);
    }
    if (p.slow_steps > static_cast<std::int64_t>(p.slow_step_numbers.size())) numbers += ", ...";
    std::fprintf(out, "  slow steps (a period over %gx the median): %lld%s\n", kSlowStepFactor,
                 static_cast<long long>(p.slow_steps),
                 (numbers + (numbers.empty() ? "" : ")")).c_str());
}

void print_rates(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    const Config& c = s.config;
    // A transfer that measured waiting is kept out of the bandwidth figures.
    const std::string transfer_rate = transfer_is_waiting(s, p)
                                          ? "waiting, not moving (no bandwidth)"
                                          : fmt("%.2f", p.transfer_gbps) + " GB/s";
    std::fprintf(out, "  transfer %s ms = %s; A %s GB/s; B %s GB/s%s\n",
                 fmt("%.4f", p.transfer_ms).c_str(), transfer_rate.c_str(),
                 fmt("%.1f", p.a_gbps).c_str(), fmt("%.1f", p.b_gbps).c_str(),
                 c_runs(c) ? ("; C " + fmt("%.2f", p.c_giter_per_s) + " Giter/s").c_str() : "");
    if (c.pattern != Pattern::pairs && c.pattern != Pattern::relay) {
        std::fprintf(out,
                     "  %s (nccl-tests' conventions): algbw %s GB/s (bytes / time), busbw %s "
                     "GB/s (algbw x %s)\n",
                     std::string(to_string(c.pattern)).c_str(),
                     fmt("%.2f", p.transfer_gbps).c_str(), fmt("%.2f", p.bus_gbps).c_str(),
                     fmt("%.3f", bus_factor(c.pattern, s.group_size)).c_str());
    }
    std::fprintf(out,
                 "  time per step %s ms (%s steps/s, aggregate %s GB/s); cold first step %s ms\n",
                 fmt("%.4f", p.time_per_step_ms).c_str(), fmt("%.1f", p.steps_per_s).c_str(),
                 fmt("%.2f", p.aggregate_gbps).c_str(), fmt("%.3f", p.cold_step_ms).c_str());
    std::fprintf(
        out,
        "  host per step (the longest rank for each): queueing %s, reading back %s "
        "(waits for the %s), stop vote %s (waits for the other ranks)\n",
        duration_text_us(p.host_queue_us).c_str(), duration_text_us(p.host_retire_us).c_str(),
        s.backend == "cuda" ? "GPU" : "host streams", duration_text_us(p.host_callback_us).c_str());
}

void print_timing(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    const Config& c = s.config;
    std::fprintf(out,
                 "  timing %s%s; %lld of %lld timed steps carry phase times, %lld share an end "
                 "event (groups of up to %lld, each step the group's period over its steps)\n",
                 p.timing.c_str(), timing_reason(p).c_str(),
                 static_cast<long long>(p.phase_timed_steps), static_cast<long long>(p.timed_steps),
                 static_cast<long long>(p.grouped_steps),
                 static_cast<long long>(p.retire_group_steps));
    // An estimate, not a bound: the medians are of phases that ran beside each other (and
    // slowed each other down), so a step can take less than their sum.
    if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0 && !step_model_explains(p)) {
        const std::string cause = waiting_cause(s);
        std::fprintf(out,
                     "  step model %s ms = %s of the phase medians: the measured step (%s ms) "
                     "beats it %sx, so the phase medians cannot explain the step%s%s\n",
                     fmt("%.4f", p.step_bound_ms).c_str(),
                     step_bound_formula(c.depth, p.overlap).c_str(),
                     fmt("%.4f", p.time_per_step_ms).c_str(),
                     fmt("%.2f", p.step_bound_ms / p.time_per_step_ms).c_str(),
                     cause.empty() ? "" : ": ", cause.c_str());
    } else if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0) {
        std::fprintf(out,
                     "  step model %s ms = %s of the phase medians (an estimate: phases that "
                     "run together slow each other, so a step may beat it); time per step %sx "
                     "that\n",
                     fmt("%.4f", p.step_bound_ms).c_str(),
                     step_bound_formula(c.depth, p.overlap).c_str(),
                     fmt("%.2f", p.time_per_step_ms / p.step_bound_ms).c_str());
    }
    if (c.graphs) {
        std::fprintf(out,
                     "  graphs: %d captured in %.1f ms (after the cold step, untimed), %lld steps "
                     "replayed\n",
                     p.graphs_captured, p.capture_ms, static_cast<long long>(p.graph_steps));
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
    const std::string slow_note =
        "  SLOW: over " + fmt("%g", 100 * kSlowPairMargin) + "% slower than the median " + unit;
    for (const PairFigures& f : p.pairs) {
        const std::string link =
            f.producer >= 0 && static_cast<std::size_t>(f.producer) < s.ranks.size()
                ? s.ranks[static_cast<std::size_t>(f.producer)].peer_link
                : "?";
        std::fprintf(out,
                     "  %s %d: rank %d (%s) %s rank %d (%s) over %s: %s GB/s, step %s ms "
                     "(transfer %s ms)%s\n",
                     unit, f.pair, f.producer, rank_place(s, f.producer).c_str(),
                     links ? "->" : "to", f.consumer, rank_place(s, f.consumer).c_str(),
                     link.c_str(), fmt("%.2f", f.transfer_gbps).c_str(),
                     fmt("%.4f", f.step_ms).c_str(), fmt("%.4f", f.transfer_ms).c_str(),
                     f.slow ? slow_note.c_str() : "");
    }
}

// One "perfect overlap" figure: with the ceilings, the one the attribution starts from (the
// transfer and C at their ceilings); without, the overlapped model of the overlap=off medians.
void print_overlap(std::FILE* out, const RunSummary& s) {
    if (s.overlap_speedup <= 0) return;
    const double step = s.passes.back().time_per_step_ms;
    std::fprintf(out,
                 "\noverlap speedup: %.3fx (time per step %s ms without overlap, %s ms with)\n",
                 s.overlap_speedup, fmt("%.4f", s.passes.front().time_per_step_ms).c_str(),
                 fmt("%.4f", step).c_str());
    const OverlapAttribution a = attribute_overlap(s);
    const double perfect = a.measured ? a.perfect_ms : s.overlap_ideal_ms;
    const std::string beaten =
        kModelBeatenFactor * step <= perfect
            ? "; the overlapped step beats it " + fmt("%.2f", perfect / step) +
                  "x, so it models nothing here" +
                  (waiting_cause(s).empty() ? "" : " (" + waiting_cause(s) + ")")
            : "; overlapped step " + fmt("%.2f", step / perfect) + "x that";
    std::fprintf(out, "  perfect overlap: %s ms per step = %s of the overlap=off medians%s%s\n",
                 fmt("%.4f", perfect).c_str(), step_bound_formula(s.config.depth, true).c_str(),
                 a.measured ? ", the transfer and C at their ceilings" : "", beaten.c_str());
    if (s.speedup_includes_io()) {
        std::fprintf(out,
                     "  note: only the overlap-on pass writes /y, and it waited %.1f ms on the "
                     "file writer, so this speedup includes I/O; compare with --write last or "
                     "none\n",
                     s.passes.back().write_wait_ms);
    }
}

void print_verdict(std::FILE* out, const RunSummary& s) {
    const Config& c = s.config;
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
    if (c.write == WriteMode::none) {
        std::fprintf(out, "output: %s (write = none: no rows of /y)\n", c.output.c_str());
        return;
    }
    std::fprintf(out, "output: %s (write %s GB/s; the pipeline waited %s ms on the writer)\n",
                 c.output.c_str(), fmt("%.2f", s.write_gbps).c_str(),
                 fmt("%.1f", s.main_pass().write_wait_ms).c_str());
}

}  // namespace

std::string duration_text_us(double us) {
    if (std::isnan(us)) return "-";
    if (us < 1000.0) return fmt("%.1f", us) + " µs";
    if (us < 1e6) return fmt("%.2f", us / 1e3) + " ms";
    return fmt("%.2f", us / 1e6) + " s";
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
    std::fprintf(out, "gpurelay: %d rank(s), %s, %s path, transport %s%s%s\n", s.world_size,
                 layout.c_str(), s.backend.c_str(), s.transport.c_str(),
                 s.transport_note.empty() ? "" : (" (" + s.transport_note + ")").c_str(),
                 c.graphs ? ", graphs on" : "");
    std::fprintf(out, "%s\n", wrapped_config(c).c_str());
    std::fprintf(out, "versions: %s\n", s.versions.c_str());
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
        const RankInfo& info = s.ranks[r];
        // For a collective, `pair` is the rank's row of /y (receivers, or every rank).
        const std::string placement = placement_text(info);
        std::fprintf(out, "rank %zu: %s %d %s on %s, %s%s%s; to its peer: %s%s%s\n", r,
                     c.pattern == Pattern::pairs ? "pair" : "row", info.pair, info.role.c_str(),
                     info.host.c_str(), info.device.c_str(), info.bus_id.empty() ? "" : " ",
                     info.bus_id.c_str(), info.peer_link.c_str(), placement.empty() ? "" : "; ",
                     placement.c_str());
    }
    print_placement_notes(out, s);
    if (!s.host_wait.empty()) {
        std::fprintf(out, "host waits: %s (%s)\n", s.host_wait.c_str(), s.host_wait_reason.c_str());
    }
    std::fprintf(out, "%s\n", memory_text(s).c_str());
    std::fprintf(out, "output: %s (up to %s)\n", c.output.c_str(),
                 human_bytes(s.output_bytes).c_str());
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
