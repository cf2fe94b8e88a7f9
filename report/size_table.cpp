// The closing table of a run of several sizes: a row per size, as nccl-tests prints its sweep.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "report/judge.hpp"
#include "report/number_text.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

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

// After the table: the sizes whose phase times cannot be read and why, once.
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

}  // namespace

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
                   interval_text(1e3 * step.value, 1e3 * step.lo, 1e3 * step.hi),
                   number_text("{:.2f}", 1e3 * j[PassFig::transfer].rendered()),
                   number_text("{:.2f}", j[PassFig::transfer_rate].rendered()),
                   number_text("{:.2f}", j[PassFig::bus_rate].rendered()),
                   number_text("{:.3f}", j[PassFig::transfer_vs_ceiling].rendered()),
                   speedup.shown() ? interval_text(speedup.value, speedup.lo, speedup.hi) : "-",
                   s.verified() ? "PASSED" : "FAILED");
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

}  // namespace gpurelay
