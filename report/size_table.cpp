// The closing table of a run of several sizes: a row per size, as nccl-tests prints its sweep.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "report/number_text.hpp"
#include "report/report.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// busbw is nccl-tests' bus bandwidth: for an all-reduce algbw x 2(n-1)/n, otherwise algbw.
void print_table_head(std::FILE* out, const RunSummary& first) {
    fmt::print(out,
               "\nsizes in one launch ({}): time and transfer are medians over each size's "
               "timed steps ({} pass)\n",
               config_value_text(first.config, "dtype"),
               first.passes.empty() || first.main_pass().overlap ? "overlap-on" : "overlap-off");
    fmt::print(out, "{:>4} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}\n", "#",
               "size", "elements", "time/step", "transfer", "algbw", "busbw", "transfer", "overlap",
               "verified");
    fmt::print(out, "{:>4} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}\n", "#", "(B)",
               "", "(us)", "(us)", "(GB/s)", "(GB/s)", "/ceiling", "speedup", "");
}

// After the table: the sizes whose phase times cannot be read (read_phase_times) and why, once.
void print_unreadable_sizes(std::FILE* out, const std::vector<RunSummary>& sizes,
                            std::size_t first) {
    std::vector<int> rows;
    std::string why;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const PhaseReading reading = read_phase_times(sizes[i]);
        if (reading.readable()) continue;
        rows.push_back(static_cast<int>(first + i));
        if (why.empty()) why = reading.text();
    }
    if (rows.empty()) return;
    fmt::print(out,
               "phase times cannot be read for size(s) {} (size {}: {}): their transfer / "
               "ceiling is left out, and a waiting transfer's GB/s (the JSON's phase_times says "
               "why)\n",
               range_list_text(rows), rows.front(), why);
}

}  // namespace

void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first) {
    if (sizes.empty()) return;
    print_table_head(out, sizes.front());
    bool verified = true;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const RunSummary& s = sizes[i];
        const PassSummary& p = s.main_pass();
        // Figures built on phase times that cannot be read are left out, as in the report.
        const bool readable = read_phase_times(s).readable(), moving = !transfer_is_waiting(s, p);
        const double ratio = readable ? against_ceilings(p, s.ceilings).transfer : kNaN;
        verified = verified && s.verified();
        fmt::print(out, "{:>4} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}\n",
                   first + i, s.config.tensor_bytes(), s.config.elements,
                   number_text("{:.2f}", p.time_per_step_ms * 1e3),
                   number_text("{:.2f}", p.transfer_ms * 1e3),
                   number_text("{:.2f}", moving ? p.transfer_gbps : kNaN),
                   number_text("{:.2f}", moving ? p.bus_gbps : kNaN), number_text("{:.3f}", ratio),
                   s.overlap_speedup > 0 ? number_text("{:.3f}", s.overlap_speedup) : "-",
                   s.verified() ? "PASSED" : "FAILED");
    }
    print_unreadable_sizes(out, sizes, first);
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

}  // namespace gpurelay
