// The phases of a step: one table that the step timer (its events), the NVTX ranges, the result
// file (/timings/PASS/NAME), the report, the JSON summary and the CSV all walk.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace gpurelay {

// The timed phases first (their times reach the outputs), then the ranges only a profile shows.
enum class Phase : std::uint8_t { a, send, recv, c, wait, b, step, verify, write, graph };

// One step's phase times in milliseconds, as the streams measured them; NaN where the phase is
// not this rank's (A and send on producers; recv, C, wait and B on consumers) or not measured.
struct StepTimes {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    double a = kNone, send = kNone, recv = kNone, c = kNone, wait = kNone, b = kNone;
    double period = kNone;  // from the previous step's end to this one's (NaN for the first)
};

// Which of a rank's sides runs a phase (a rank that plays both runs both sides' phases).
enum class Side : std::uint8_t { producer, consumer, either };

struct PhaseInfo {
    Phase phase;
    const char* name;   // in the file, the JSON, the CSV and the report
    const char* range;  // the NVTX range's name (nullptr: none, the period spans whole steps)
    std::uint32_t colour;
    Side side;
    const char* stream;         // where it runs, for the reader of a profile
    double StepTimes::*member;  // where its time goes (nullptr: not timed)
};

// clang-format off
inline constexpr std::array<PhaseInfo, 10> kPhaseTable = {{
    {Phase::a,      "a",      "A",      0xff4e79a7, Side::producer, "producer", &StepTimes::a},
    {Phase::send,   "send",   "send",   0xfff28e2b, Side::producer, "producer", &StepTimes::send},
    {Phase::recv,   "recv",   "recv",   0xffe15759, Side::consumer, "comm",     &StepTimes::recv},
    {Phase::c,      "c",      "C",      0xff76b7b2, Side::consumer, "compute",  &StepTimes::c},
    {Phase::wait,   "wait",   "wait",   0xffbab0ac, Side::consumer, "compute",  &StepTimes::wait},
    {Phase::b,      "b",      "B",      0xff59a14f, Side::consumer, "compute",  &StepTimes::b},
    {Phase::step,   "step",   nullptr,  0,          Side::either,   "last",     &StepTimes::period},
    {Phase::verify, "verify", "verify", 0xffb07aa1, Side::consumer, "compute",  nullptr},
    {Phase::write,  "write",  "write",  0xffedc948, Side::consumer, "io",       nullptr},
    {Phase::graph,  "graph",  "graph",  0xffff9da7, Side::either,   "launch",   nullptr},
}};
// clang-format on
inline constexpr std::uint32_t kPassColour = 0xff9c755f;  // the pass's own range: brown

constexpr std::size_t index_of(Phase phase) { return static_cast<std::size_t>(phase); }
constexpr const PhaseInfo& info(Phase phase) { return kPhaseTable[index_of(phase)]; }

// The timed phases, in the order the outputs list them (and any array laid out like them).
inline constexpr std::size_t kPhaseCount = index_of(Phase::step) + 1;
inline constexpr std::span<const PhaseInfo, kPhaseCount> kPhases{kPhaseTable.data(), kPhaseCount};

static_assert(
    [] {
        for (std::size_t i = 0; i < kPhaseTable.size(); ++i) {
            if (index_of(kPhaseTable[i].phase) != i) return false;
            if ((kPhaseTable[i].member != nullptr) != (i < kPhaseCount)) return false;
        }
        return true;
    }(),
    "kPhaseTable: in Phase order, the timed phases first");

}  // namespace gpurelay
