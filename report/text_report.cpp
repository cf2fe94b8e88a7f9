// The report rank 0 prints after the run: whether its phase times can be read, each pass's
// phases, rates and stability, the overlap speedup, verification and the output. (The header,
// printed before the steps, is report/header.cpp's.)
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

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
    if (c.launch == Launch::device) {
        // The roles run every step; the host only feeds C, copies y out and votes.
        fmt::print(out,
                   "  host per step (the longest rank for each): nothing queued (launch = "
                   "device), stop vote {} (waits for the other ranks)\n",
                   duration_text_us(p.host_callback_us));
        return;
    }
    fmt::print(out,
               "  host per step (the longest rank for each): queueing {}, reading back {} "
               "(waits for the {}), stop vote {} (waits for the other ranks)\n",
               duration_text_us(p.host_queue_us), duration_text_us(p.host_retire_us),
               s.backend == "cuda" ? "GPU" : "host streams", duration_text_us(p.host_callback_us));
}

// How the pass was timed; with readable phase times, the step model (which then explains the
// step: one it cannot explain makes them unreadable, read_phase_times).
void print_timing(std::FILE* out, const RunSummary& s, const PassSummary& p, bool readable) {
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
    if (readable && std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0) {
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

// The links of the pass: one a line, or summarised with the slowest named (report/at_scale.cpp).
void print_links(std::FILE* out, const RunSummary& s, const PassSummary& p) {
    for (const std::string& line : link_lines(s, p, !transfer_is_waiting(s, p))) {
        fmt::print(out, "{}\n", line);
    }
}

// The overlap speedup; with readable phase times, perfect overlap, the one model of the overlapped
// step the report gives (perfect_overlap_ms), and its attribution.
void print_overlap(std::FILE* out, const RunSummary& s, bool readable) {
    if (s.overlap_speedup <= 0) return;
    const double step = s.passes.back().time_per_step_ms;
    fmt::print(out,
               "\noverlap speedup: {:.3f}x (time per step {} ms without overlap, {} ms with)\n",
               s.overlap_speedup, number_text("{:.4f}", s.passes.front().time_per_step_ms),
               number_text("{:.4f}", step));
    if (readable) {
        const double perfect = perfect_overlap_ms(s);
        fmt::print(out,
                   "  perfect overlap: {} ms per step = {} of the overlap=off medians{}; "
                   "overlapped step {}x that\n",
                   number_text("{:.4f}", perfect), step_bound_formula(s.config.depth, true),
                   s.ceilings.measured ? ", the transfer and C at their ceilings" : "",
                   number_text("{:.2f}", step / perfect));
        print_overlap_attribution(out, s);
    }
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

// Once, before the passes, where the phase times cannot be read: why, and what is left out.
void print_reading(std::FILE* out, const PhaseReading& reading) {
    if (reading.readable()) return;
    std::string left_out;
    for (std::size_t i = 0; i < std::size(kWithheldFigures); ++i) {
        left_out += i == 0 ? "" : i + 1 == std::size(kWithheldFigures) ? " and " : ", ";
        left_out += kWithheldFigures[i].words;
    }
    fmt::print(out,
               "\nphase times: cannot be read here ({})\n  so the report leaves out {} (the "
               "JSON, CSV and file keep them, with the reason); the time per step, stability and "
               "verification stand\n",
               reading.text(), left_out);
}

}  // namespace

std::string duration_text_us(double us) {
    if (std::isnan(us)) return "-";
    if (us < 1000.0) return number_text("{:.1f}", us) + " µs";
    if (us < 1e6) return number_text("{:.2f}", us / 1e3) + " ms";
    return number_text("{:.2f}", us / 1e6) + " s";
}

void print_report(std::FILE* out, const RunSummary& s) {
    const PhaseReading reading = read_phase_times(s);
    print_reading(out, reading);
    bool causes_said = false;
    for (const PassSummary& p : s.passes) {
        // The links (and a relay's stages) of the main pass only: the JSON has every pass's.
        const bool main = &p == &s.main_pass();
        print_phase_table(out, p);
        print_rates(out, s, p);
        if (reading.readable()) print_ceilings(out, s, p);
        print_stability(out, s, p, causes_said);
        print_timing(out, s, p, reading.readable());
        print_relay(out, p, reading.readable());
        if (!main) continue;
        print_links(out, s, p);
        print_relay_stages(out, s, p, reading.readable());
    }
    print_overlap(out, s, reading.readable());
    print_verdict(out, s);
    std::fflush(out);
}

}  // namespace gpurelay
