// The closing table of a run of several sizes: a row per size, as nccl-tests prints its sweep.
#include <cstdio>
#include <string>

#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

// busbw is nccl-tests' bus bandwidth: for an all-reduce algbw x 2(n-1)/n, otherwise algbw.
void print_table_head(std::FILE* out, const RunSummary& first) {
    std::fprintf(out,
                 "\nsizes in one launch (%s): time and transfer are medians over each size's "
                 "timed steps (%s pass)\n",
                 config_value_text(first.config, "dtype").c_str(),
                 first.passes.empty() || first.main_pass().overlap ? "overlap-on" : "overlap-off");
    std::fprintf(out, "%4s %12s %11s %11s %11s %9s %9s %9s %8s %9s\n", "#", "size", "elements",
                 "time/step", "transfer", "algbw", "busbw", "transfer", "overlap", "verified");
    std::fprintf(out, "%4s %12s %11s %11s %11s %9s %9s %9s %8s %9s\n", "#", "(B)", "", "(us)",
                 "(us)", "(GB/s)", "(GB/s)", "/ceiling", "speedup", "");
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
        std::fprintf(out, "%4zu %12llu %11llu %11s %11s %9s %9s %9s %8s %9s\n", first + i,
                     static_cast<unsigned long long>(s.config.tensor_bytes()),
                     static_cast<unsigned long long>(s.config.elements),
                     fmt("%.2f", p.time_per_step_ms * 1e3).c_str(),
                     fmt("%.2f", p.transfer_ms * 1e3).c_str(), fmt("%.2f", p.transfer_gbps).c_str(),
                     fmt("%.2f", p.bus_gbps).c_str(), fmt("%.3f", ratios.transfer).c_str(),
                     s.overlap_speedup > 0 ? fmt("%.3f", s.overlap_speedup).c_str() : "-",
                     s.verified() ? "PASSED" : "FAILED");
    }
    if (first > 0) {
        std::fprintf(out,
                     "sizes 0 to %zu ran before the stop: their figures are in the file "
                     "(/cases/N), not in this table\n",
                     first - 1);
    }
    const RunSummary& last = sizes.back();
    std::fprintf(out, "output: %s (one group per size, /cases/0 to /cases/%zu)\n",
                 last.config.output.c_str(), first + sizes.size() - 1);
    std::fprintf(out, "verification of the sizes above: %s\n", verified ? "PASSED" : "FAILED");
    std::fflush(out);
}

}  // namespace gpurelay
