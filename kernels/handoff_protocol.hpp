// Inside kernels/: the role steps of the device-driven hand-off (handoff.hpp), which the CUDA
// kernels (handoff_cuda.cu) and their host twins (handoff_host.cpp) both run, so the two drivers
// cannot drift apart. A driver gives the steps its "hands", the few things that differ between a
// GPU and a host thread:
//   now()                 its clock, in ns
//   leads()               whether this thread is its block's first (the one that waits and counts)
//   block()               the block's index, 0 to blocks - 1 (block 0 leads the role)
//   meet()                the block's threads meet (__syncthreads; nothing for one thread)
//   tell(v)               the first thread's v, to every thread of the block
//   load(w), store(w, v)  acquire and release at system scope (the peer may be another process)
//   peek(w), nudge(w, v)  the same without ordering, for words that carry no data (the host's
//                         stop, C's gate): no fence to pay for
//   add(w, v), claim(w)   a release add; whether this call turned *w from 0 to 1
//   put(field, v)         a release store into the role's status, which the host reads
//   wait(w, v, ns)        until *w has reached v (the wrap-around order), false after ns
//   run_a(...), run_b(...) this block's share of A's and B's values (B adds its wrong values)
// A step's waits are its first block's; it tells the others through `go` whether the step goes
// (the role's blocks then all stop at the same step), and they tell it through `gathered` that
// their share is done, before it publishes the step to the peer.
#pragma once

#include <cstdint>

#include "kernels/formula.hpp"
#include "kernels/handoff.hpp"

namespace gpurelay::handoff {

// Whether a word holding `word` has reached `value`, in the wrap-around order of 32-bit sequence
// numbers (as runtime/host_word.hpp's word_reached, which device code cannot call).
GPURELAY_HD inline bool reached(std::uint32_t word, std::uint32_t value) {
    return static_cast<std::int32_t>(word - value) >= 0;
}

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
    return static_cast<std::uint32_t>(s % r.ring.depth);
}
// The sequence number step s's use of its slot gives the slot's words.
GPURELAY_HD inline std::uint32_t use_of(const RoleArgs& r, std::int64_t s) {
    return r.ring.uses[slot_of(r, s)] + static_cast<std::uint32_t>((s - r.first) / r.ring.depth) +
           1;
}

// A wait that ran out: the first in the role names itself and its step in the status.
template <class Hands>
GPURELAY_HD Verdict fail(Hands& h, const RoleArgs& r, HandOffWait wait, std::int64_t s) {
    if (h.claim(&workspace(r).failed)) {
        h.put(&r.status->failed_step, s);
        h.put(&r.status->failed_wait, static_cast<std::uint32_t>(wait));
    }
    return kFailed;
}

// Step s's verdict: the first block decides (`decide`, on its first thread), the others learn it
// through `go`, and every thread of every block returns it. The others wait for `go` twice as
// long as any wait of the first block, so a timeout names the first block's wait.
template <class Hands, class Decide>
GPURELAY_HD Verdict agree_step(Hands& h, const RoleArgs& r, std::int64_t s, Decide&& decide) {
    std::uint32_t verdict = kGo;
    if (h.leads()) {
        const std::int64_t n = s - r.first;
        std::uint32_t* go = &workspace(r).go;
        if (h.block() == 0) {
            verdict = decide();
            if (r.blocks > 1) h.store(go, go_word(n, static_cast<Verdict>(verdict)));
        } else if (h.wait(go, go_word(n, kGo), 2 * r.timeout_ns)) {
            verdict = h.load(go) & 3u;
        } else {
            verdict = fail(h, r, HandOffWait::go, s);
        }
    }
    return static_cast<Verdict>(h.tell(verdict));
}

// Every block's share of step s is done: true on every thread once the first block has counted
// the others' (each added after its block met, so their writes are visible to whoever sees the
// first block's release). If the count never comes, the others' next `go` says the role failed.
template <class Hands>
GPURELAY_HD bool gather_step(Hands& h, const RoleArgs& r, std::int64_t s) {
    h.meet();
    std::uint32_t done = 1;
    if (h.leads() && h.block() != 0) h.add(&workspace(r).gathered, 1u);
    if (h.leads() && h.block() == 0 && r.blocks > 1) {
        const std::int64_t n = s - r.first;
        const auto all = static_cast<std::uint32_t>((n + 1) * (r.blocks - 1));
        if (!h.wait(&workspace(r).gathered, all, r.timeout_ns)) {
            fail(h, r, HandOffWait::gather, s);
            h.store(&workspace(r).go, go_word(n + 1, kFailed));
            done = 0;
        }
    }
    return h.tell(done) != 0;
}

// The producer's step s: once the consumer has released the slot's last use, A writes the slot
// and the slot's arrival word says so. Asked to stop, it ends the pass before s instead: the
// arrival word carries the stop marker, which the consumer reads as the pass's end.
template <typename T, class Hands>
GPURELAY_HD Verdict producer_step(Hands& h, const ProducerArgs<T>& p, std::int64_t s) {
    const RoleArgs& r = p.role;
    const std::uint32_t k = slot_of(r, s), use = use_of(r, s);
    ProducerStamps& stamps = p.stamps[s - r.first];
    const Verdict verdict = agree_step(h, r, s, [&] {
        stamps.start = h.now();
        const bool stopping = h.peek(p.stop) != 0;
        // The marker, too, waits for the release: the consumer may still be reading the slot's
        // word for its use before.
        if ((stopping || !p.skip_reuse_wait) &&
            !h.wait(r.ring.released[k], use - 1, r.timeout_ns)) {
            return fail(h, r, HandOffWait::release, s);
        }
        if (stopping) {
            h.store(r.ring.arrived[k], use + kHandOffStopMark);
            return kStopped;
        }
        stamps.a_start = h.now();
        return kGo;
    });
    if (verdict != kGo) return verdict;
    h.run_a(Span<T>{static_cast<T*>(r.ring.slot[k]), r.elements}, s, r.seed, p.form);
    if (!gather_step(h, r, s)) return kFailed;
    if (h.leads() && h.block() == 0) {
        stamps.a_end = h.now();
        h.store(r.ring.arrived[k], use);
        stamps.published = h.now();
        h.put(&r.status->done, s + 1);
    }
    return kGo;
}

// The consumer's waits before B of step s: the tensor (or the producer's stop marker), C of the
// step, and the host's copy of the y slot's last written step. Its first block's first thread.
template <typename T, class Hands>
GPURELAY_HD Verdict consumer_ready(Hands& h, const ConsumerArgs<T>& c, std::int64_t s) {
    const RoleArgs& r = c.role;
    const std::uint32_t k = slot_of(r, s), use = use_of(r, s);
    ConsumerStamps& stamps = c.stamps[s - r.first];
    stamps.start = h.now();
    if (!h.wait(r.ring.arrived[k], use, r.timeout_ns)) return fail(h, r, HandOffWait::arrival, s);
    if (h.load(r.ring.arrived[k]) - use >= kHandOffStopMark) return kStopped;
    stamps.arrived = h.now();
    const auto next = static_cast<std::uint32_t>(s + 1);
    if (c.has_c && !c.overlap) h.nudge(c.gate, next);  // C of step s may start
    if (c.has_c && !h.wait(c.c_done, next, r.timeout_ns)) {
        return fail(h, r, HandOffWait::c_done, s);
    }
    const std::int64_t w = s - r.ring.depth;
    if (w >= r.first && c.written[w - r.first] != 0 &&
        !h.wait(c.y_copied, static_cast<std::uint32_t>(w + 1), r.timeout_ns)) {
        return fail(h, r, HandOffWait::y_copied, s);
    }
    stamps.ready = h.now();
    return kGo;
}

// The consumer's step s: B reads the slot (counting wrong values) into y slot k, and the slot's
// release word gives it back to the producer; with overlap, C of the next step may start.
template <typename T, class Hands>
GPURELAY_HD Verdict consumer_step(Hands& h, const ConsumerArgs<T>& c, std::int64_t s) {
    const RoleArgs& r = c.role;
    const std::uint32_t k = slot_of(r, s), use = use_of(r, s);
    ConsumerStamps& stamps = c.stamps[s - r.first];
    const Verdict verdict = agree_step(h, r, s, [&] { return consumer_ready(h, c, s); });
    if (verdict != kGo) return verdict;
    h.run_b(Span<const T>{static_cast<const T*>(r.ring.slot[k]), r.elements},
            Span<T>{c.y[k], r.elements}, c.alpha, s, r.seed, c.expected, &stamps.x_mismatches);
    if (!gather_step(h, r, s)) return kFailed;
    if (h.leads() && h.block() == 0) {
        stamps.b_end = h.now();
        h.store(r.ring.released[k], use);
        if (c.has_c && c.overlap) h.nudge(c.gate, static_cast<std::uint32_t>(s + 2));
        stamps.released = h.now();
        h.put(&r.status->done, s + 1);
    }
    return kGo;
}

// A role's whole pass: `step` for each step until one does not go; the first block's first thread
// then says where the role ended.
template <class Hands, class Step>
GPURELAY_HD void run_role(Hands& h, const RoleArgs& r, Step&& step) {
    const bool first = h.leads() && h.block() == 0;
    if (first) h.put(&r.status->started_ns, h.now());
    std::int64_t s = r.first;
    while (s < r.steps && step(s) == kGo) ++s;
    if (first) {
        h.put(&r.status->end_step, s);
        h.put(&r.status->ended, 1u);
    }
}

}  // namespace gpurelay::handoff
