// NVTX ranges and thread names for Nsight Systems, in the "gpurelay" domain. Without CUDA the
// calls compile to nothing; with it they cost a branch each until a tool attaches.
#pragma once

#include <cstdint>

namespace gpurelay::nvtx {

// The NVTX category of warm-up steps' ranges (0, no category, for timed steps).
inline constexpr std::uint32_t kWarmupCategory = 1;

#if defined(GPURELAY_HAVE_CUDA)
// Whether the calls do anything, so callers can skip preparing ranges that would vanish.
inline constexpr bool kBuilt = true;
// Opens a range named `message` (copied by the tool) with colour `argb` on the calling thread.
void push(const char* message, std::uint32_t argb);
// Opens a step's range: named by its phase (so Nsight's summaries group by phase), the step in
// the range's int64 payload, and warm-up steps in category kWarmupCategory ("warm-up").
void push_step(const char* phase, std::uint32_t argb, std::int64_t step, bool warmup);
// Closes the calling thread's innermost gpurelay range.
void pop();
// Names the calling OS thread in the timeline, e.g. "rank 1 consumer: comm stream".
void name_current_thread(const char* name);
#else
inline constexpr bool kBuilt = false;
inline void push(const char*, std::uint32_t) {}
inline void push_step(const char*, std::uint32_t, std::int64_t, bool) {}
inline void pop() {}
inline void name_current_thread(const char*) {}
#endif

}  // namespace gpurelay::nvtx

namespace gpurelay {

// A range open from construction to the end of the scope, on the constructing thread.
class NvtxRange {
  public:
    NvtxRange(const char* message, std::uint32_t argb) { nvtx::push(message, argb); }
    ~NvtxRange() { nvtx::pop(); }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace gpurelay
