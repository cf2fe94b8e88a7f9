// The report's ranks, links and a relay's stages at any rank count (render.hpp's kLinksListed).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "report/number_text.hpp"
#include "report/render.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {
namespace {

std::string ms(double value) { return number_text("{:.4f}", value); }

// Each distinct value with how many times it occurs, the commonest first, the first `shown` of
// them: "host memory (CPU path): 64", "a: 8, b: 8 and 2 others".
std::string counted(const std::vector<std::string>& values, std::size_t shown) {
    std::map<std::string, std::size_t> counts;
    for (const std::string& value : values) ++counts[value];
    std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (std::size_t i = 0; i < sorted.size() && i < shown; ++i) {
        text += fmt::format("{}{} ({})", i == 0 ? "" : ", ", sorted[i].first, sorted[i].second);
    }
    if (sorted.size() > shown) text += fmt::format(" and {} others", sorted.size() - shown);
    return text;
}

// "3" or "2 to 4": the range of a count over the hosts.
std::string count_range(const std::map<std::string, std::size_t>& per_host) {
    const auto [least, most] = std::minmax_element(
        per_host.begin(), per_host.end(), [](auto& a, auto& b) { return a.second < b.second; });
    return range_text(least->second, most->second);
}

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

// Each hop's transfer against its bare transfer, measured alone in the same launch, where the
// judgement shows it: one a line up to kLinksListed hops, else their median and extremes.
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

// A stage's line; its phases' medians only where they can be read (`phases`).
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

// Every stage one a line up to kLinksListed, else the stages' periods summarised, the
// kSlowestNamed slowest, and every stage that counted a wrong element (up to kSlowestNamed).
void print_stages(std::FILE* out, const RelayFigures& relay, bool phases) {
    const std::vector<StageFigures>& stages = relay.stage_figures;
    if (stages.size() <= kLinksListed) {
        for (const StageFigures& f : stages) fmt::print(out, "{}\n", stage_line(f, phases));
        return;
    }
    std::vector<double> steps;
    for (const StageFigures& f : stages) steps.push_back(f.median(Phase::step));
    const PhaseStats st = phase_stats(steps);
    std::vector<const StageFigures*> slowest, wrong;
    for (const StageFigures& f : stages) {
        slowest.push_back(&f);
        if (f.x_mismatches + f.c_mismatches > 0) wrong.push_back(&f);
    }
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

}  // namespace

std::vector<std::string> rank_summary_lines(const RunSummary& s) {
    std::map<std::string, std::size_t> ranks_per_host, gpus_per_host;
    std::set<std::string> gpu_seen;
    std::vector<std::string> hosts, roles, links, placements;
    for (const RankInfo& rank : s.ranks) {
        ++ranks_per_host[rank.host];
        if (!rank.bus_id.empty() && gpu_seen.insert(rank.host + " " + rank.bus_id).second)
            ++gpus_per_host[rank.host];
        hosts.push_back(rank.host);
        roles.push_back(rank.role);
        links.push_back(rank.peer_link);
        placements.push_back(placement_text(rank).empty() ? "not known" : placement_text(rank));
    }
    const std::string gpus = gpus_per_host.empty() ? ", no GPU (" + s.backend + " path)"
                                                   : " x " + count_range(gpus_per_host) + " GPU(s)";
    return {fmt::format("ranks: {} = {} host(s) x {} rank(s){}; hosts (ranks): {}; roles: {}",
                        s.ranks.size(), ranks_per_host.size(), count_range(ranks_per_host), gpus,
                        counted(hosts, 4), counted(roles, 4)),
            fmt::format("  to their peers: {}; placement: {}", counted(links, 3),
                        counted(placements, 3))};
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

std::vector<std::string> link_lines(const RunSummary& s, const PassSummary& p,
                                    const PassJudgement& judged) {
    const std::string name = link_name(s.config.pattern);
    const std::string slow_note =
        fmt::format("  SLOW: over {:g}% slower than the median {}", 100 * kSlowPairMargin, name);
    // The transfer is a phase time, its rate a judged figure: each where shown.
    const bool transfers = judged[PassFig::transfer].shown();
    auto line = [&](std::size_t i, const std::string& flag) {
        const PairFigures& f = p.pairs[i];
        const Figure& rate = judged.links[i];
        return fmt::format(
            "  {}: {}: {}step {} ms{}{}", link_label(s, f), link_place(s, f),
            rate.shown() ? number_text("{:.2f}", rate.value) + " GB/s, " : "", ms(f.step_ms),
            transfers ? " (transfer " + ms(f.transfer_ms) + " ms)" : "", f.slow ? flag : "");
    };
    std::vector<std::string> lines;
    if (p.pairs.size() <= 1) return lines;
    if (p.pairs.size() <= kLinksListed) {
        for (std::size_t i = 0; i < p.pairs.size(); ++i) lines.push_back(line(i, slow_note));
        return lines;
    }
    const LinkSpread spread = link_spread(p.pairs);
    // The value and the first link that has it: "0.0011 (pair 3)".
    auto extreme = [&](double value, double PairFigures::*field) {
        const auto at = std::find_if(p.pairs.begin(), p.pairs.end(),
                                     [&](const PairFigures& f) { return f.*field == value; });
        return fmt::format("{} ({} {})", ms(value), name, at == p.pairs.end() ? -1 : at->pair);
    };
    lines.push_back(fmt::format(
        "  {} {}s (one a line up to {}): {}step median {} ms, min {}, max {}", spread.count, name,
        kLinksListed,
        transfers
            ? fmt::format("transfer median {} ms, min {}, max {}; ", ms(spread.transfer.median),
                          extreme(spread.transfer.min, &PairFigures::transfer_ms),
                          extreme(spread.transfer.max, &PairFigures::transfer_ms))
            : "",
        ms(spread.step.median), extreme(spread.step.min, &PairFigures::step_ms),
        extreme(spread.step.max, &PairFigures::step_ms)));
    lines.push_back(fmt::format(
        "  the {} slowest; {} of {} flagged SLOW (over {:g}% slower than "
        "the median {}):",
        spread.slowest.size(), spread.flagged, spread.count, 100 * kSlowPairMargin, name));
    for (const std::size_t i : spread.slowest) lines.push_back("  " + line(i, "  SLOW"));
    return lines;
}

void print_relay(std::FILE* out, const PassSummary& pass, const PassJudgement& judged) {
    if (!pass.relay) return;
    const RelayFigures& relay = *pass.relay;
    const int hop = slowest_hop(pass);
    std::string slowest = "no hop timed";
    if (hop >= 0) {
        const PairFigures& h = pass.pairs[static_cast<std::size_t>(hop)];
        const int hops = std::max(relay.stages - 1, 1);
        // The hop's transfer is a phase time, the period over it a ratio of them: each where
        // the judgement shows it.
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

void print_relay_stages(std::FILE* out, const PassSummary& pass, const PassJudgement& judged) {
    if (!pass.relay) return;
    print_hop_ceilings(out, pass, judged);
    print_stages(out, *pass.relay, judged.phases_shown);
}

}  // namespace gpurelay
