// A relay's figures: each stage as its rank measured it, the fill latency, and the steady period
// against the slowest hop (the hops themselves are the pass's pairs), for the report, the JSON
// and the file.
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/mpi_error.hpp"
#include "comm/mpi_wait.hpp"
#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

// One rank's figures as they travel: group, stage, seven times, two counts, the fill latency, and
// the host's three times per step.
constexpr int kStageFields = 15;

double timed_median(const PassResult& result, double StepTimes::*member) {
    std::vector<double> values;
    for (std::int64_t s = result.timed_from; s < result.end_step; ++s) {
        values.push_back(result.steps[static_cast<std::size_t>(s)].*member);
    }
    return phase_stats(std::move(values)).median;
}

std::string ms(double value) { return fmt("%.4f", value); }

// A host time of the timed steps, per timed step (µs): where a stage's host spends its period.
double host_us_per_step(const PassResult& result, double total_ms) {
    const auto timed = static_cast<double>(result.end_step - result.timed_from);
    return timed > 0 ? 1000.0 * total_ms / timed : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

RelayFigures summarize_relay(MPI_Comm comm, const PairPlacement& placement,
                             const PassResult& result) {
    std::uint64_t x_wrong = 0, c_wrong = 0;
    for (std::size_t s = 0; placement.role != Role::producer && s < result.steps.size(); ++s) {
        x_wrong += result.x_mismatches[s];
        c_wrong += result.c_mismatches[s];
    }
    const double mine[kStageFields] = {static_cast<double>(placement.group),
                                       static_cast<double>(relay_stage(placement)),
                                       timed_median(result, &StepTimes::period),
                                       timed_median(result, &StepTimes::a),
                                       timed_median(result, &StepTimes::recv),
                                       timed_median(result, &StepTimes::c),
                                       timed_median(result, &StepTimes::wait),
                                       timed_median(result, &StepTimes::b),
                                       timed_median(result, &StepTimes::send),
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

// Each hop's transfer against its bare transfer, measured alone in the same launch.
void print_hop_ceilings(std::FILE* out, const Ceilings& ceilings, const PassSummary& pass) {
    for (std::size_t h = 0; h < pass.pairs.size() && h < ceilings.hop_transfer_ms.size(); ++h) {
        const PairFigures& f = pass.pairs[h];
        const double bare = ceilings.hop_transfer_ms[h];
        std::fprintf(
            out, "  hop %d against its ceiling: transfer %s ms, bare %s ms (%s of its speed)\n",
            f.pair, ms(f.transfer_ms).c_str(), ms(bare).c_str(), ms(bare / f.transfer_ms).c_str());
    }
}

}  // namespace

void print_relay(std::FILE* out, const RunSummary& summary, const PassSummary& pass) {
    if (!pass.relay) return;
    const RelayFigures& relay = *pass.relay;
    const int hop = slowest_hop(pass);
    std::string against = "no hop timed";
    if (hop >= 0) {
        const PairFigures& h = pass.pairs[static_cast<std::size_t>(hop)];
        char text[160];
        std::snprintf(text, sizeof text,
                      "its slowest hop's transfer %s ms (hop %d: rank %d -> %d), %.2fx",
                      ms(h.transfer_ms).c_str(), h.pair, h.producer, h.consumer,
                      period_over_slowest_hop(pass));
        against = text;
    }
    std::fprintf(out,
                 "  relay of %d stages: period %s ms against %s; fill latency %s ms (the first "
                 "timed tensor, from every rank idle to the last stage's B)\n",
                 relay.stages, ms(pass.time_per_step_ms).c_str(), against.c_str(),
                 ms(relay.fill_ms).c_str());
    print_hop_ceilings(out, summary.ceilings, pass);
    for (const StageFigures& f : relay.stage_figures) {
        std::fprintf(
            out,
            "  stage %d of group %d (rank %d): step %s ms; A %s, recv %s, C %s, wait %s, B "
            "%s, send %s ms; host per step: queueing %s, reading back %s, stop vote %s; wrong: "
            "%llu in x, %llu in C\n",
            f.stage, f.group, f.rank, ms(f.step_ms).c_str(), ms(f.a_ms).c_str(),
            ms(f.recv_ms).c_str(), ms(f.c_ms).c_str(), ms(f.wait_ms).c_str(), ms(f.b_ms).c_str(),
            ms(f.send_ms).c_str(), duration_text_us(f.host_queue_us).c_str(),
            duration_text_us(f.host_retire_us).c_str(),
            duration_text_us(f.host_callback_us).c_str(),
            static_cast<unsigned long long>(f.x_mismatches),
            static_cast<unsigned long long>(f.c_mismatches));
    }
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

std::string relay_json_from_root(MPI_Comm comm, const PassSummary& pass) {
    std::string text = relay_json(pass);
    auto length = static_cast<std::uint64_t>(text.size());
    const Deadline bound("the broadcast of a relay's figures for the file");
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm));
    text.resize(static_cast<std::size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
    return text;
}

}  // namespace gpurelay
