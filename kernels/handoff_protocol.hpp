// Inside kernels/: the role steps of the device-driven hand-off (handoff.hpp), which the CUDA
// kernels (handoff_cuda.cu) and their host twins (kernels_host.cpp) both run, made of three parts:
//   the team, the driver's "hands": is_leader() (this thread waits and counts for its block),
//       block() (block 0 leads the role), sync_block(), broadcast_from_leader(v)
//   the memory ordering and the clock, the same for both (runtime/slot_flags.hpp): load_acquire,
//       store_release, load_relaxed, store_relaxed, fetch_add_release, wait_until, now_ns,
//       SlotFlags
//   the work, the driver's too: run_a(...), run_b(...), this block's share of A's and B's values
// A step's waits are its first block's leader's, on its own copy of the side's flags; it tells the
// other blocks through `go` whether the step goes (so that all stop at the same step), and they
// tell it through `gathered` that their share is done, before it signals the step to the peer.
#pragma once

#include <cstdint>

#include "kernels/formula.hpp"
#include "kernels/handoff.hpp"

namespace gpurelay::handoff {

// What a role's first block says of a step, told to the others with the step's place in the pass.
enum Verdict : std::uint32_t { kGo = 0, kStopped = 1, kFailed = 2 };
GPURELAY_HD inline std::uint32_t go_word(std::int64_t n, Verdict verdict) {
    return (static_cast<std::uint32_t>(n + 1) << 2) | verdict;
}

// The words a role's blocks share, each on its own 64-byte line: the others poll `go` while
// they add to `gathered`. Zeroed before the role is queued.
struct RoleWorkspace {
    alignas(64) std::uint32_t go;
    alignas(64) std::uint32_t gathered;
    alignas(64) std::uint32_t failed;  // the first wait that ran out claims the status
};

static_assert(sizeof(RoleWorkspace) <= kHandOffWorkspaceBytes, "kHandOffWorkspaceBytes");

GPURELAY_HD inline RoleWorkspace& workspace(const RoleArgs& r) {
    return *static_cast<RoleWorkspace*>(r.workspace);
}
GPURELAY_HD inline std::uint32_t slot_of(const RoleArgs& r, std::int64_t s) {
    return static_cast<std::uint32_t>(s % r.flags.slots);
}
// The bound of a wait that starts now.
GPURELAY_HD inline std::uint64_t deadline(const RoleArgs& r) { return now_ns() + r.timeout_ns; }
template <class Hands>
GPURELAY_HD bool first_leader(const Hands& h) {
    return h.is_leader() && h.block() == 0;
}

// A wait that ran out: the first in the role names itself and its step in the status.
GPURELAY_HD inline Verdict fail(const RoleArgs& r, HandOffWait wait, std::int64_t s) {
    if (fetch_add_release(&workspace(r).failed, 1u) == 0) {
        store_release(&r.status->failed_step, s);
        store_release(&r.status->failed_wait, static_cast<std::uint32_t>(wait));
    }
    return kFailed;
}

// Step s's verdict: the first block decides (`decide`, on its leader), the others learn it
// through `go`, and every thread of every block returns it. The others wait for `go` twice as
// long as any wait of the first block, so a timeout names the first block's wait.
template <class Hands, class Decide>
GPURELAY_HD Verdict agree_step(Hands& h, const RoleArgs& r, std::int64_t s, Decide&& decide) {
    std::uint32_t verdict = kGo;
    if (h.is_leader()) {
        const std::int64_t n = s - r.first;
        std::uint32_t* go = &workspace(r).go;
        if (h.block() == 0) {
            verdict = decide();
            if (r.blocks > 1) store_release(go, go_word(n, static_cast<Verdict>(verdict)));
        } else if (wait_until(go, go_word(n, kGo), now_ns() + 2 * r.timeout_ns)) {
            verdict = load_acquire(go) & 3u;
        } else {
            verdict = fail(r, HandOffWait::go, s);
        }
    }
    return static_cast<Verdict>(h.broadcast_from_leader(verdict));
}

// Every block's share of step s is done: true on every thread once the first block has counted
// the others' (each added after its block synced, so their writes are visible to whoever sees the
// first block's release). If the count never comes, the others' next `go` says the role failed.
template <class Hands>
GPURELAY_HD bool gather_step(Hands& h, const RoleArgs& r, std::int64_t s) {
    h.sync_block();
    std::uint32_t done = 1;
    if (h.is_leader() && h.block() != 0) fetch_add_release(&workspace(r).gathered, 1u);
    if (first_leader(h) && r.blocks > 1) {
        const std::int64_t n = s - r.first;
        const auto all = static_cast<std::uint32_t>((n + 1) * (r.blocks - 1));
        if (!wait_until(&workspace(r).gathered, all, deadline(r))) {
            fail(r, HandOffWait::gather, s);
            store_release(&workspace(r).go, go_word(n + 1, kFailed));
            done = 0;
        }
    }
    return h.broadcast_from_leader(done) != 0;
}

// The producer's step s: once the consumer has released the slot's last use, A writes the slot
// and its flag says so. Asked to stop, it ends the pass before s instead: the stop mark, which
// the consumer reads as the pass's end.
template <typename T, class Hands>
GPURELAY_HD Verdict role_step(Hands& h, const ProducerArgs<T>& p, SlotFlags& flags,
                              std::int64_t s) {
    const RoleArgs& r = p.role;
    const std::uint32_t k = slot_of(r, s);
    ProducerStamps& stamps = p.stamps[s - r.first];
    const Verdict verdict = agree_step(h, r, s, [&] {
        stamps.start = now_ns();
        const bool stopping = load_relaxed(p.stop) != 0;
        // The mark, too, waits for the release: the consumer may still be reading the slot's
        // flag for its use before.
        if ((stopping || flags.reuse_wait) && !flags.wait(k, deadline(r))) {
            return fail(r, HandOffWait::release, s);
        }
        if (stopping) {
            flags.signal_stop(k);
            return kStopped;
        }
        stamps.a_start = now_ns();
        return kGo;
    });
    if (verdict != kGo) return verdict;
    h.run_a(Span<T>{static_cast<T*>(r.flags.slot[k]), r.elements}, s, r.seed, p.form);
    if (!gather_step(h, r, s)) return kFailed;
    if (first_leader(h)) {
        stamps.a_end = now_ns();
        // One fence orders A's values before both words the step raises: the slot's flag (the
        // consumer's wait) and `done` (the host's).
        fence_release();
        flags.signal_after_fence(k);
        stamps.published = now_ns();
        store_relaxed(&r.status->done, s + 1);
    }
    return kGo;
}

// The consumer's waits before B of step s: the tensor (or the producer's stop mark), C of the
// step, and the host's copy of the y slot's last written step. Its first block's leader.
template <typename T>
GPURELAY_HD Verdict consumer_ready(const ConsumerArgs<T>& c, const SlotFlags& flags,
                                   std::int64_t s) {
    const RoleArgs& r = c.role;
    const std::uint32_t k = slot_of(r, s);
    ConsumerStamps& stamps = c.stamps[s - r.first];
    stamps.start = now_ns();
    if (!flags.wait(k, deadline(r))) return fail(r, HandOffWait::arrival, s);
    if (flags.stopped(k)) return kStopped;
    stamps.arrived = now_ns();
    const auto next = static_cast<std::uint32_t>(s + 1);
    if (c.has_c && !c.overlap) store_relaxed(c.gate, next);  // C of step s may start
    if (c.has_c && !wait_until(c.c_done, next, deadline(r))) {
        return fail(r, HandOffWait::c_done, s);
    }
    const std::int64_t w = s - r.flags.slots;
    if (w >= r.first && c.written[w - r.first] != 0 &&
        !wait_until(c.y_copied, static_cast<std::uint32_t>(w + 1), deadline(r))) {
        return fail(r, HandOffWait::y_copied, s);
    }
    stamps.ready = now_ns();
    return kGo;
}

// The consumer's step s: B reads the slot (counting wrong values) into y slot k, and the slot's
// flag gives it back to the producer; with overlap, C of the next step may start.
template <typename T, class Hands>
GPURELAY_HD Verdict role_step(Hands& h, const ConsumerArgs<T>& c, SlotFlags& flags,
                              std::int64_t s) {
    const RoleArgs& r = c.role;
    const std::uint32_t k = slot_of(r, s);
    ConsumerStamps& stamps = c.stamps[s - r.first];
    const Verdict verdict = agree_step(h, r, s, [&] { return consumer_ready(c, flags, s); });
    if (verdict != kGo) return verdict;
    h.run_b(Span<const T>{static_cast<const T*>(r.flags.slot[k]), r.elements},
            Span<T>{c.y[k], r.elements}, c.alpha, s, r.seed, c.expected, &stamps.x_mismatches);
    if (!gather_step(h, r, s)) return kFailed;
    if (first_leader(h)) {
        stamps.b_end = now_ns();
        // One fence orders B's reads of x and its y before both words the step raises: the
        // slot's flag (the producer's reuse wait) and `done` (the host's copy of y).
        fence_release();
        flags.signal_after_fence(k);
        if (c.has_c && c.overlap) store_relaxed(c.gate, static_cast<std::uint32_t>(s + 2));
        stamps.released = now_ns();
        store_relaxed(&r.status->done, s + 1);
    }
    return kGo;
}

// A role's whole pass (ProducerArgs or ConsumerArgs), step by step until one does not go. The
// first block's leader works on `flags`, its own copy of the side's flags (a driver puts it where
// its leader is quick to reach), stores their counts back home and says where the role ended.
template <class Hands, class Args>
GPURELAY_HD void run_role(Hands& h, const Args& args, SlotFlags& flags) {
    const RoleArgs& r = args.role;
    const bool first = first_leader(h);
    if (first) {
        flags = r.flags;
        store_release(&r.status->started_ns, now_ns());
    }
    std::int64_t s = r.first;
    while (s < r.steps && role_step(h, args, flags, s) == kGo) ++s;
    if (first) {
        for (std::uint32_t k = 0; k < flags.slots; ++k) r.home->uses[k] = flags.uses[k];
        store_release(&r.status->end_step, s);
        store_release(&r.status->ended, 1u);
    }
}

}  // namespace gpurelay::handoff
