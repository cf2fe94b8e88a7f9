// The timed phases of a step: one enum, and one table {phase, name, member} that the pipeline,
// the result file, the report, the JSON summary and the CSV all walk, instead of positions kept
// in step by hand.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace gpurelay {

enum class Phase : std::uint8_t { a, send, recv, c, wait, b, step };

// One step's phase times in milliseconds, as the streams measured them; NaN where the phase is
// not this rank's (A and send on producers; recv, C, wait and B on consumers) or not measured.
struct StepTimes {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    double a = kNone, send = kNone, recv = kNone, c = kNone, wait = kNone, b = kNone;
    double period = kNone;  // from the previous step's end to this one's (NaN for the first)
};

struct PhaseInfo {
    Phase phase;
    const char* name;  // in the report, the JSON, the HDF5 file (/timings/PASS/NAME), the CSV
    double StepTimes::*member;
};

// In the order the report, the JSON and the file list them.
inline constexpr std::array<PhaseInfo, 7> kPhases = {{
    {Phase::a, "a", &StepTimes::a},
    {Phase::send, "send", &StepTimes::send},
    {Phase::recv, "recv", &StepTimes::recv},
    {Phase::c, "c", &StepTimes::c},
    {Phase::wait, "wait", &StepTimes::wait},
    {Phase::b, "b", &StepTimes::b},
    {Phase::step, "step", &StepTimes::period},
}};
inline constexpr std::size_t kPhaseCount = kPhases.size();

// Where `phase` sits in kPhases (and in any array laid out like it).
constexpr std::size_t index_of(Phase phase) { return static_cast<std::size_t>(phase); }
static_assert([] {
    for (std::size_t i = 0; i < kPhaseCount; ++i) {
        if (index_of(kPhases[i].phase) != i) return false;
    }
    return true;
}());

}  // namespace gpurelay
