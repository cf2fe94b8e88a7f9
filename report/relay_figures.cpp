// A relay's figures: each stage as its rank measured it, the fill latency, and the steady period
// against the slowest hop (the hops themselves are the pass's pairs), for the report, the JSON
// and the file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

// One rank's figures as they travel: group, stage, seven times, two counts, the fill latency, and
// the host's three times per step.
constexpr int kStageFields = 15;

double timed_median(const PassResult& result, Phase phase) {
    return result.phases[index_of(phase)].quantile(0.5);
}

std::string ms(double value) { return number_text("{:.4f}", value); }

// A host time of the timed steps, per timed step (µs): where a stage's host spends its period.
double host_us_per_step(const PassResult& result, double total_ms) {
    const auto timed = static_cast<double>(result.end_step - result.timed_from);
    return timed > 0 ? 1000.0 * total_ms / timed : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

RelayFigures summarize_relay(MPI_Comm comm, const PairPlacement& placement,
                             const PassResult& result) {
    const bool consumer = placement.role != Role::producer;
    const std::uint64_t x_wrong = consumer ? result.x_mismatches : 0;
    const std::uint64_t c_wrong = consumer ? result.c_mismatches : 0;
    const double mine[kStageFields] = {static_cast<double>(placement.group),
                                       static_cast<double>(relay_stage(placement)),
                                       timed_median(result, Phase::step),
                                       timed_median(result, Phase::a),
                                       timed_median(result, Phase::recv),
                                       timed_median(result, Phase::c),
                                       timed_median(result, Phase::wait),
                                       timed_median(result, Phase::b),
                                       timed_median(result, Phase::send),
                                       static_cast<double>(x_wrong),
                                       static_cast<double>(c_wrong),
                                       result.fill_ms,
                                       host_us_per_step(result, result.host_queue_ms),
                                       host_us_per_step(result, result.host_retire_ms),
                                       host_us_per_step(result, result.host_callback_ms)};
    int size = 1;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    std::vector<double> all(static_cast<std::size_t>(kStageFields) *
                            static_cast<std::size_t>(size));
    const Deadline bound("gathering a relay's stage figures");
    MPI_CHECK(
        MPI_Allgather(mine, kStageFields, MPI_DOUBLE, all.data(), kStageFields, MPI_DOUBLE, comm));
    RelayFigures figures;
    figures.stages = placement.group_size;
    for (int r = 0; r < size; ++r) {
        const double* v = all.data() + static_cast<std::size_t>(r) * kStageFields;
        figures.stage_figures.push_back({static_cast<int>(v[0]), static_cast<int>(v[1]), r, v[2],
                                         v[3], v[4], v[5], v[6], v[7], v[8],
                                         static_cast<std::uint64_t>(v[9]),
                                         static_cast<std::uint64_t>(v[10]), v[12], v[13], v[14]});
        // The slowest group's; NaN only when no last stage measured it.
        figures.fill_ms = std::fmax(figures.fill_ms, v[11]);
    }
    return figures;
}

int slowest_hop(const PassSummary& pass) {
    int slowest = -1;
    for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
        const double t = pass.pairs[i].transfer_ms;
        if (!std::isnan(t) &&
            (slowest < 0 || t > pass.pairs[static_cast<std::size_t>(slowest)].transfer_ms))
            slowest = static_cast<int>(i);
    }
    return slowest;
}

double slowest_hop_ms(const PassSummary& pass) {
    const int hop = slowest_hop(pass);
    return hop < 0 ? std::numeric_limits<double>::quiet_NaN()
                   : pass.pairs[static_cast<std::size_t>(hop)].transfer_ms;
}

double period_over_slowest_hop(const PassSummary& pass) {
    return pass.time_per_step_ms / slowest_hop_ms(pass);
}

namespace {

// Each hop's transfer against its bare transfer, measured alone in the same launch: one a line up
// to kLinksListed hops, else their median and extremes.
void print_hop_ceilings(std::FILE* out, const Ceilings& ceilings, const PassSummary& pass) {
    std::vector<double> ratios;
    for (std::size_t h = 0; h < pass.pairs.size() && h < ceilings.hop_transfer_ms.size(); ++h) {
        ratios.push_back(ceilings.hop_transfer_ms[h] / pass.pairs[h].transfer_ms);
    }
    if (ratios.size() > kLinksListed) {
        const PhaseStats st = phase_stats(ratios);
        auto hop_of = [&](double ratio) {
            return pass
                .pairs[static_cast<std::size_t>(std::find(ratios.begin(), ratios.end(), ratio) -
                                                ratios.begin())]
                .pair;
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
                   f.pair, ms(f.transfer_ms), ms(ceilings.hop_transfer_ms[h]), ratios[h]);
    }
}

std::string stage_line(const StageFigures& f) {
    return fmt::format(
        "  stage {} of group {} (rank {}): step {} ms; A {}, recv {}, C {}, wait {}, B {}, send {} "
        "ms; host per step: queueing {}, reading back {}, stop vote {}; wrong: {} in x, {} in C",
        f.stage, f.group, f.rank, ms(f.step_ms), ms(f.a_ms), ms(f.recv_ms), ms(f.c_ms),
        ms(f.wait_ms), ms(f.b_ms), ms(f.send_ms), duration_text_us(f.host_queue_us),
        duration_text_us(f.host_retire_us), duration_text_us(f.host_callback_us), f.x_mismatches,
        f.c_mismatches);
}

// Every stage one a line up to kLinksListed, else the stages' periods summarised, the
// kSlowestNamed slowest, and every stage that counted a wrong element (up to kSlowestNamed).
void print_stages(std::FILE* out, const RelayFigures& relay) {
    const std::vector<StageFigures>& stages = relay.stage_figures;
    if (stages.size() <= kLinksListed) {
        for (const StageFigures& f : stages) fmt::print(out, "{}\n", stage_line(f));
        return;
    }
    std::vector<double> steps;
    for (const StageFigures& f : stages) steps.push_back(f.step_ms);
    const PhaseStats st = phase_stats(steps);
    std::vector<const StageFigures*> slowest, wrong;
    for (const StageFigures& f : stages) {
        slowest.push_back(&f);
        if (f.x_mismatches + f.c_mismatches > 0) wrong.push_back(&f);
    }
    std::stable_sort(slowest.begin(), slowest.end(),
                     [](const auto* a, const auto* b) { return a->step_ms > b->step_ms; });
    slowest.resize(std::min(slowest.size(), kSlowestNamed));
    fmt::print(out,
               "  {} stages (one a line up to {}): step median {} ms, min {}, max {}; the {} "
               "slowest:\n",
               stages.size(), kLinksListed, ms(st.median), ms(st.min), ms(st.max), slowest.size());
    for (const StageFigures* f : slowest) fmt::print(out, "  {}\n", stage_line(*f));
    if (wrong.empty()) return;
    fmt::print(out, "  {} stage(s) counted wrong elements{}:\n", wrong.size(),
               wrong.size() > kSlowestNamed ? fmt::format(", the first {}", kSlowestNamed) : "");
    wrong.resize(std::min(wrong.size(), kSlowestNamed));
    for (const StageFigures* f : wrong) fmt::print(out, "  {}\n", stage_line(*f));
}

}  // namespace

void print_relay(std::FILE* out, const PassSummary& pass, bool readable) {
    if (!pass.relay) return;
    const RelayFigures& relay = *pass.relay;
    const int hop = slowest_hop(pass);
    std::string slowest = "no hop timed";
    if (hop >= 0) {
        const PairFigures& h = pass.pairs[static_cast<std::size_t>(hop)];
        const int hops = std::max(relay.stages - 1, 1);
        // The period over a hop's transfer is a ratio of phase times: only where they read.
        slowest = fmt::format(
            "hop {}, stage {} -> {} of group {} (ranks {} -> {}): transfer {} ms{}", h.pair,
            h.pair % hops, h.pair % hops + 1, h.pair / hops, h.producer, h.consumer,
            ms(h.transfer_ms),
            readable ? fmt::format(", the period {:.2f}x that", period_over_slowest_hop(pass))
                     : "");
    }
    fmt::print(out,
               "  relay of {} stages: period {} ms; slowest hop: {}; fill latency {} ms (the first "
               "timed tensor, from every rank idle to the last stage's B)\n",
               relay.stages, ms(pass.time_per_step_ms), slowest, ms(relay.fill_ms));
}

void print_relay_stages(std::FILE* out, const RunSummary& summary, const PassSummary& pass,
                        bool readable) {
    if (!pass.relay) return;
    if (readable) print_hop_ceilings(out, summary.ceilings, pass);
    print_stages(out, *pass.relay);
}

std::string relay_json(const PassSummary& pass) {
    if (!pass.relay) return "null";
    const RelayFigures& relay = *pass.relay;
    nlohmann::ordered_json j;
    j["stages"] = relay.stages;
    j["period_ms"] = pass.time_per_step_ms;
    j["slowest_hop"] = slowest_hop(pass);
    j["slowest_hop_ms"] = slowest_hop_ms(pass);
    j["period_over_slowest_hop"] = period_over_slowest_hop(pass);
    j["fill_ms"] = relay.fill_ms;
    j["stage_figures"] = nlohmann::ordered_json::array();
    for (const StageFigures& f : relay.stage_figures) {
        j["stage_figures"].push_back({{"group", f.group},
                                      {"stage", f.stage},
                                      {"rank", f.rank},
                                      {"step_ms", f.step_ms},
                                      {"a_ms", f.a_ms},
                                      {"recv_ms", f.recv_ms},
                                      {"c_ms", f.c_ms},
                                      {"wait_ms", f.wait_ms},
                                      {"b_ms", f.b_ms},
                                      {"send_ms", f.send_ms},
                                      {"host_us_per_step",
                                       {{"queue", f.host_queue_us},
                                        {"retire", f.host_retire_us},
                                        {"callback", f.host_callback_us}}},
                                      {"x_mismatches", f.x_mismatches},
                                      {"c_mismatches", f.c_mismatches}});
    }
    return j.dump();
}

std::string text_from_root(MPI_Comm comm, std::string text) {
    auto length = static_cast<std::uint64_t>(text.size());
    const Deadline bound("the broadcast of the report's figures for the file");
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm));
    text.resize(static_cast<std::size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
    return text;
}

}  // namespace gpurelay
