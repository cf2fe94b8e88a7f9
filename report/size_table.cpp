// The closing table of a run of several sizes: a row per size, as nccl-tests prints its sweep.
#include <cstdio>
#include <string>

#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

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

}  // namespace

void print_size_table(std::FILE* out, const std::vector<RunSummary>& sizes, std::size_t first) {
    if (sizes.empty()) return;
    print_table_head(out, sizes.front());
    bool verified = true;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const RunSummary& s = sizes[i];
        const PassSummary& p = s.main_pass();
        const CeilingRatios ratios = against_ceilings(p, s.ceilings);
        verified = verified && s.verified();
        fmt::print(out, "{:>4} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}\n",
                   first + i, s.config.tensor_bytes(), s.config.elements,
                   number_text("{:.2f}", p.time_per_step_ms * 1e3),
                   number_text("{:.2f}", p.transfer_ms * 1e3),
                   number_text("{:.2f}", p.transfer_gbps), number_text("{:.2f}", p.bus_gbps),
                   number_text("{:.3f}", ratios.transfer),
                   s.overlap_speedup > 0 ? number_text("{:.3f}", s.overlap_speedup) : "-",
                   s.verified() ? "PASSED" : "FAILED");
    }
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
