// Whether a run's phase times can be read as the work they time: the one judgement the text
// report, the JSON summary, the results CSV and the file all take, a table of rules walked once.
#include <cmath>
#include <string>
#include <vector>

#include "report/number_text.hpp"
#include "report/report.hpp"

namespace gpurelay {
namespace {

// More busy threads than a host has cores (the CPU path): a phase's time is mostly its thread's
// wait for a core.
std::string oversubscription(const RunSummary& s) {
    const std::vector<HostLoad> loads = oversubscribed_hosts(s);
    if (loads.empty()) return "";
    const HostLoad& load = loads.front();
    return fmt::format("{} busy threads on {} cores of {}{} (CPU path): they measure the scheduler",
                       load.threads, load.cores, load.host,
                       loads.size() > 1 ? fmt::format(" and {} more hosts", loads.size() - 1) : "");
}

// A phase faster than its own ceiling (measured alone, with nothing beside it) by more than
// kCeilingTolerance: the phase's events timed something other than the phase. The largest.
std::string beats_ceiling(const RunSummary& s) {
    if (!s.ceilings.measured) return "";
    struct Faster {
        double ratio = 0;
        std::string phase, ceiling;
        const PassSummary* pass = nullptr;
    } fastest;
    for (const PassSummary& p : s.passes) {
        auto consider = [&](double ratio, std::string phase, std::string ceiling) {
            if (ratio > kCeilingTolerance && ratio > fastest.ratio)
                fastest = {ratio, std::move(phase), std::move(ceiling), &p};
        };
        const CeilingRatios r = against_ceilings(p, s.ceilings);
        consider(r.transfer, "the transfer", "the bare transfer");
        consider(r.a, "A", "a copy");
        consider(r.b, "B", "a copy");
        consider(r.c, "C", "C alone");
        for (std::size_t h = 0; h < p.pairs.size() && h < s.ceilings.hop_transfer_ms.size(); ++h) {
            consider(s.ceilings.hop_transfer_ms[h] / p.pairs[h].transfer_ms,
                     "hop " + std::to_string(p.pairs[h].pair) + "'s transfer", "its bare transfer");
        }
    }
    if (fastest.pass == nullptr) return "";
    // Said without the ratio: the report shows no fraction of a ceiling over the tolerance, not
    // even as a reason (the JSON's vs_ceilings has it).
    return fmt::format("{} ran faster than {}, its ceiling, in the {} pass", fastest.phase,
                       fastest.ceiling, pass_name(fastest.pass->overlap));
}

// A step kModelBeatenFactor times faster than a model of it (the pass's step model, or perfect
// overlap): the phase medians the model adds up cannot be the step's.
std::string beats_model(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        if (std::isfinite(p.step_bound_ms) && p.step_bound_ms > 0 && !step_model_explains(p)) {
            return fmt::format("the {} step beats its step model {:.2f}x", pass_name(p.overlap),
                               p.step_bound_ms / p.time_per_step_ms);
        }
    }
    const double perfect = perfect_overlap_ms(s), step = s.main_pass().time_per_step_ms;
    if (s.overlap_speedup > 0 && kModelBeatenFactor * step <= perfect) {
        return fmt::format("the overlapped step beats perfect overlap {:.2f}x", perfect / step);
    }
    return "";
}

std::string waiting_transfer(const RunSummary& s) {
    for (const PassSummary& p : s.passes) {
        if (!transfer_is_waiting(s, p)) continue;
        const double step = p.phase(Phase::step).median;
        const std::string how = std::isfinite(step) && p.transfer_ms > step
                                    ? std::string("longer than its own step")
                                    : fmt::format("at {:.2g}% of its bare transfer's speed",
                                                  100 * against_ceilings(p, s.ceilings).transfer);
        return fmt::format("the {} transfer measured waiting ({})", pass_name(p.overlap), how);
    }
    return "";
}

// Overlap made the step slower, yet the overlapped step is faster than perfect overlap, a model
// from the overlap=off pass's own medians: the two passes' phase times disagree.
std::string overlap_contradiction(const RunSummary& s) {
    const double perfect = perfect_overlap_ms(s), step = s.main_pass().time_per_step_ms;
    if (!(s.overlap_speedup > 0 && s.overlap_speedup < 1.0 && step < perfect)) return "";
    return "overlap made the step slower, yet the overlapped step beats perfect overlap";
}

struct ReadingRule {
    const char* code;
    std::string (*finding)(const RunSummary&);  // what the run shows, "" when it does not
};
const ReadingRule kReadingRules[] = {
    {"oversubscribed", oversubscription},
    {"beats_ceiling", beats_ceiling},
    {"beats_model", beats_model},
    {"transfer_waiting", waiting_transfer},
    {"overlap_contradiction", overlap_contradiction},
};

std::string joined(const std::vector<UnreadableReason>& reasons,
                   std::string UnreadableReason::*part, const char* separator) {
    std::string text;
    for (const UnreadableReason& reason : reasons) {
        text += (text.empty() ? "" : separator) + reason.*part;
    }
    return text;
}

}  // namespace

std::string PhaseReading::codes() const { return joined(reasons, &UnreadableReason::code, ";"); }

std::string PhaseReading::text() const { return joined(reasons, &UnreadableReason::text, "; "); }

PhaseReading read_phase_times(const RunSummary& s) {
    PhaseReading reading;
    if (s.passes.empty()) return reading;
    for (const ReadingRule& rule : kReadingRules) {
        if (std::string finding = rule.finding(s); !finding.empty()) {
            reading.reasons.push_back({rule.code, std::move(finding)});
        }
    }
    return reading;
}

double perfect_overlap_ms(const RunSummary& s) {
    const OverlapAttribution a = attribute_overlap(s);
    return a.measured ? a.perfect_ms : s.overlap_ideal_ms;
}

}  // namespace gpurelay
