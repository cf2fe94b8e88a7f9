// The slot protocol, described once here, and its flags: 32-bit words two sides share (another
// thread, process or GPU), with the memory ordering every side uses on them, written once over
// cuda::atomic_ref (CUDA code) or std::atomic_ref. Slot k of a ring (step mod depth) holds one
// tensor in flight; its two flags only grow, counting the slot's uses:
//   producer, use n of slot k:  wait released[k] >= n - 1; write the slot; arrived[k] = n
//   consumer, use n of slot k:  wait arrived[k] >= n; read the slot; released[k] = n
// So a slot is written again only once everything that read it has finished, across processes
// too. Each side counts its uses beside the flags (SlotFlags, as MSCCL++'s semaphore keeps its
// expected value beside its flag): no caller does sequence arithmetic. A wait compares in the
// wrap-around order of 32-bit counts, so it is right whenever it is taken. Streams drive the
// flags (the ipc transport queues each wait and signal), and so do kernels and host threads (the
// roles of launch = "device", kernels/handoff.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "runtime/span.hpp"

#if defined(__CUDACC__)
#include <cuda/atomic>
#else
#include <atomic>
#endif

namespace gpurelay {

// Whether a word holding `word` has reached `value`: (int32_t)(word - value) >= 0.
GPURELAY_HD inline bool reached(std::uint32_t word, std::uint32_t value) {
    return static_cast<std::int32_t>(word - value) >= 0;
}

namespace atomics {
#if defined(__CUDACC__)
// System scope: the other side may be another process or the host.
template <typename T>
using Ref = ::cuda::atomic_ref<T, ::cuda::thread_scope_system>;
using ::cuda::std::memory_order_acquire, ::cuda::std::memory_order_relaxed,
    ::cuda::std::memory_order_release;
#else
template <typename T>
using Ref = std::atomic_ref<T>;
using std::memory_order_acquire, std::memory_order_relaxed, std::memory_order_release;
#endif
}  // namespace atomics

// Host only: wakes this process's threads waiting in wait_until, after a store to a word.
void wake_host_waiters();
// Host only: until `*word` has reached `value` (true) or `deadline` passes (false), polling
// (runtime/poll.hpp): a spin of 100 us, as the writer is usually about to store, then pauses up to
// `longest_pause` under `sparing`. A store of this process ends a pause at once; one by another
// process or a GPU is seen at the next look, so the longest pause is how late that can be.
bool wait_on_host(const std::uint32_t* word, std::uint32_t value,
                  std::chrono::steady_clock::time_point deadline,
                  std::chrono::microseconds longest_pause);
// Host only: as wait_on_host, for `timeout`; throws a timeout error naming `what` after it.
void wait_until(const std::uint32_t* word, std::uint32_t value, std::chrono::milliseconds timeout,
                const char* what, std::chrono::microseconds longest_pause);

// On the host, after a store: this process's waiters look again (a stream that waits on the
// word, another role's thread); a GPU's waiters spin.
GPURELAY_HD inline void wake_after_store() {
#if !defined(__CUDA_ARCH__)
    wake_host_waiters();
#endif
}

template <typename T>
GPURELAY_HD T load_acquire(const T* word) {
    return atomics::Ref<T>(*const_cast<T*>(word)).load(atomics::memory_order_acquire);
}
// For words that carry no data (a stop, C's gate): no fence to pay for.
template <typename T>
GPURELAY_HD T load_relaxed(const T* word) {
    return atomics::Ref<T>(*const_cast<T*>(word)).load(atomics::memory_order_relaxed);
}
// What this thread wrote before is visible to whoever sees the value.
template <typename T>
GPURELAY_HD void store_release(T* word, T value) {
    atomics::Ref<T>(*word).store(value, atomics::memory_order_release);
    wake_after_store();
}
template <typename T>
GPURELAY_HD void store_relaxed(T* word, T value) {
    atomics::Ref<T>(*word).store(value, atomics::memory_order_relaxed);
    wake_after_store();
}
// Orders this thread's writes before every store that follows it, relaxed ones too: a step that
// raises several words pays for one fence instead of one a word.
GPURELAY_HD inline void fence_release() {
#if defined(__CUDACC__)
    ::cuda::atomic_thread_fence(::cuda::std::memory_order_release, ::cuda::thread_scope_system);
#else
    std::atomic_thread_fence(std::memory_order_release);
#endif
}
// Returns the value before the add.
template <typename T>
GPURELAY_HD T fetch_add_release(T* word, T value) {
    const T before = atomics::Ref<T>(*word).fetch_add(value, atomics::memory_order_release);
    wake_after_store();
    return before;
}

// The clock a wait's deadline is on, in ns: a GPU's %globaltimer, the host's steady_clock.
GPURELAY_HD inline std::uint64_t now_ns() {
#if defined(__CUDA_ARCH__)
    std::uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
#else
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
#endif
}

// Until `*word` has reached `value` (true), or now_ns() passes `deadline_ns` (false). On a GPU a
// tight loop of acquire loads (a hand-off's latency is the look after the store); on the host
// wait_on_host's, pausing up to 1 ms so that a long wait leaves a core to the peer it waits for.
GPURELAY_HD inline bool wait_until(const std::uint32_t* word, std::uint32_t value,
                                   std::uint64_t deadline_ns) {
#if defined(__CUDA_ARCH__)
    while (!reached(load_acquire(word), value)) {
        if (now_ns() > deadline_ns) return false;
    }
    return true;
#else
    const auto deadline = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::nanoseconds(deadline_ns)));
    return wait_on_host(word, value, deadline, std::chrono::microseconds(1000));
#endif
}

// The most slots a ring holds (the pipeline's kMaxDepth).
inline constexpr std::uint32_t kMaxSlots = 64;
// How far past the count of its next use the producer raises a slot's arrived word when it stops
// before that use: the consumer, waiting for the use, finds the mark and ends there instead.
inline constexpr std::uint32_t kStopMark = 1u << 30;

// One side's flags over a ring of slots: per slot, the word the other side raises (`inbound`:
// released[k] on the producer's side, arrived[k] on the consumer's), the one this side raises
// (`outbound`), and this side's uses so far. Trivially copyable: a kernel takes it by value.
struct SlotFlags {
    void* slot[kMaxSlots];  // the consumer's slot k, as this process addresses it
    const std::uint32_t* inbound[kMaxSlots];
    std::uint32_t* outbound[kMaxSlots];
    std::uint32_t uses[kMaxSlots];
    std::uint32_t slots;
    // How far the inbound word must be past this side's uses for its next use: the consumer's
    // waits for that use's tensor (1), the producer's for the release of its last use (0).
    std::uint32_t ahead;
    bool reuse_wait;  // the producer's wait for a slot's release (false: debug_skip_reuse_wait)

    // The inbound value this side's next use of slot k waits for, and the count it signals.
    GPURELAY_HD std::uint32_t expected(std::size_t k) const { return uses[k] + ahead; }
    GPURELAY_HD std::uint32_t next(std::size_t k) { return ++uses[k]; }
    // Until the other side has done what this side's next use of slot k needs; false past
    // `deadline_ns` (now_ns's clock).
    GPURELAY_HD bool wait(std::size_t k, std::uint64_t deadline_ns) const {
        return wait_until(inbound[k], expected(k), deadline_ns);
    }
    // This side's use of slot k is done: the other side may go on with it.
    GPURELAY_HD void signal(std::size_t k) { store_release(outbound[k], next(k)); }
    // As signal, after a fence_release() of this thread's that orders the use before it.
    GPURELAY_HD void signal_after_fence(std::size_t k) { store_relaxed(outbound[k], next(k)); }
    // The producer, after wait(k), ends its pass before its next use of slot k.
    GPURELAY_HD void signal_stop(std::size_t k) const {
        store_release(outbound[k], uses[k] + 1 + kStopMark);
    }
    // The consumer, after wait(k): whether the producer stopped before this use.
    GPURELAY_HD bool stopped(std::size_t k) const {
        return load_acquire(inbound[k]) - expected(k) >= kStopMark;
    }
};

}  // namespace gpurelay
