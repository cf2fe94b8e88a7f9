// A step the device drives itself (launch = "device"): one persistent worker per role runs every
// step of a pass and hands each tensor over through the consumer's slots and their flags
// (runtime/slot_flags.hpp's protocol, the ipc transport's with A in place), with no host in the
// loop: on a GPU a persistent kernel of a few blocks, on the CPU path a host stream's thread (and
// one for each further block), both running the role steps of handoff_protocol.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "runtime/slot_flags.hpp"
#include "runtime/span.hpp"
#include "runtime/stream.hpp"

namespace gpurelay {

// Threads per block of a role's kernel (the value loops of kernels_cuda.cu take the same).
inline constexpr std::uint32_t kHandOffThreads = 256;

// The waits of a role step, as a timeout names them (kHandOffWaitText).
enum class HandOffWait : std::uint32_t {
    none,
    release,   // the producer, for the consumer's release of the slot it writes next
    arrival,   // the consumer, for the producer's tensor
    c_done,    // the consumer, for its step's C on the compute stream
    y_copied,  // the consumer, for the host's copy out of the y slot it writes next
    go,        // a block, for its role's first block to say the step may go
    gather,    // a role's first block, for the others' share of the step
};
inline constexpr const char* kHandOffWaitText[] = {
    "no wait",
    "waiting for the consumer to release a slot",
    "waiting for the producer's tensor",
    "waiting for the step's C",
    "waiting for the host to copy a y slot out",
    "waiting for the role's first block to start the step",
    "waiting for the role's other blocks to finish the step",
};
inline const char* handoff_wait_text(HandOffWait wait) {
    return kHandOffWaitText[static_cast<std::uint32_t>(wait)];
}

// A role's words that the host reads while the role runs (pinned host memory on a GPU). The role
// writes `end_step` before `ended`, and a failure before `ended`.
struct RoleStatus {
    std::int64_t done;          // steps [first, done) are done by every block of the role
    std::int64_t end_step;      // one past the last step it ran, once ended
    std::uint64_t started_ns;   // its clock when its first block started
    std::int64_t failed_step;   // the step whose wait ran out
    std::uint32_t failed_wait;  // a HandOffWait, none unless one ran out
    std::uint32_t ended;        // 1 once every block has left the pass
};

// One step of each role on its driver's clock (now_ns), in ns.
struct ProducerStamps {
    std::uint64_t start, a_start, a_end, published;
};
struct ConsumerStamps {
    std::uint64_t start, arrived, ready, b_end, released;
    Counter x_mismatches;  // B's wrong values of x, summed over the blocks
};

// Bytes of a role's own words (its blocks' workspace), in its device memory.
inline constexpr std::size_t kHandOffWorkspaceBytes = 192;

// What both roles' drivers take. `workspace` and `status` must be zero when the role is queued.
struct RoleArgs {
    // This side's flags as the pass starts, and where they live between passes (the transport's,
    // Transport::slot_flags), which the role's counts are stored back to as it ends.
    SlotFlags flags;
    SlotFlags* home = nullptr;
    std::int64_t first = 0, steps = 0;  // the pass runs steps [first, steps)
    std::uint64_t elements = 0;
    std::uint32_t seed = 0;
    std::uint32_t blocks = 1;      // handoff_blocks()
    std::uint64_t timeout_ns = 0;  // every wait's bound (timeout_s)
    RoleStatus* status = nullptr;
    void* workspace = nullptr;  // kHandOffWorkspaceBytes
};

template <typename T>
struct ProducerArgs {
    RoleArgs role;
    TensorForm form;
    // Nonzero once the host asks the pass to stop: read once a step, before the step's wait.
    const std::uint32_t* stop = nullptr;
    ProducerStamps* stamps = nullptr;  // [steps - first]
};

template <typename T>
struct ConsumerArgs {
    RoleArgs role;
    T alpha = 1;
    TensorForm expected;
    T* y[kMaxSlots];  // y slot k (depth of them)
    bool overlap = true;
    // C's words (none without has_c): B of step s waits for c_done >= s + 1, and C of step s for
    // gate >= s + 1, which the consumer raises after B of the step before, or with overlap off
    // once the step's tensor has arrived.
    bool has_c = false;
    const std::uint32_t* c_done = nullptr;
    std::uint32_t* gate = nullptr;
    // The host's copy of y out: before B of step s overwrites the y slot of step w = s - depth,
    // a written step w (written[w - first]) waits for y_copied >= w + 1.
    const std::uint32_t* y_copied = nullptr;
    const std::uint8_t* written = nullptr;  // [steps - first]
    ConsumerStamps* stamps = nullptr;       // [steps - first]
};

// The blocks of a role for tensors of `elements` values of `value_bytes` each: as many as the
// tensor fills (kHandOffThreads threads, each a 16-byte vector), at most `cap` (0: one per SM, or
// on the CPU path 1).
std::uint32_t handoff_blocks(Backend backend, std::uint64_t elements, std::size_t value_bytes,
                             std::int64_t cap);
// Throws a usage error when a producer's and a consumer's kernels of these blocks cannot be
// resident together on this process's GPU (an occupancy query of each: both spin until the
// other moves, so a block that waits for a place would wait for ever). The CPU path's threads
// always can.
void check_handoff_fits(Backend backend, std::uint32_t producer_blocks,
                        std::uint32_t consumer_blocks);

// Queues a role's whole pass (ProducerArgs or ConsumerArgs) on `stream`; the role writes its
// status as it goes.
template <class Args>
void launch_role(const Args& args, Stream& stream);

}  // namespace gpurelay
