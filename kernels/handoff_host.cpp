// The device-driven hand-off's host twins: each role runs the role steps of handoff_protocol.hpp
// on its host stream's thread, as one queued operation for the whole pass, with a thread of its
// own for each further block. And the dispatch of handoff.hpp's calls to a GPU or a host stream.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/handoff.hpp"
#include "kernels/handoff_protocol.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/host_word.hpp"

#if defined(GPURELAY_HAVE_CUDA)
#include "kernels/handoff_cuda.hpp"
#include "runtime/cuda_stream.hpp"
#endif

namespace gpurelay {
namespace {

// Block b's share of n values, of `blocks`: a contiguous range, as even as it gets.
struct Share {
    std::size_t begin, end;
};
Share share_of(std::size_t n, std::uint32_t b, std::uint32_t blocks) {
    return {n * b / blocks, n * (b + 1) / blocks};
}

// The hands of one host thread, which is a whole block (handoff_protocol.hpp says what each
// does). Words are std::atomic_ref on memory another thread or process shares; stores go through
// store_host_word, so a stream of this process that waits on one (C's gate) wakes at once.
struct HostHands {
    std::uint32_t index = 0, blocks = 1;

    std::uint64_t now() const {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now().time_since_epoch())
                                              .count());
    }
    bool leads() const { return true; }
    std::uint32_t block() const { return index; }
    void meet() const {}
    std::uint32_t tell(std::uint32_t value) const { return value; }
    std::uint32_t load(const std::uint32_t* word) const {
        return std::atomic_ref(*const_cast<std::uint32_t*>(word)).load(std::memory_order_acquire);
    }
    void store(std::uint32_t* word, std::uint32_t value) const { store_host_word(word, value); }
    std::uint32_t peek(const std::uint32_t* word) const {
        return std::atomic_ref(*const_cast<std::uint32_t*>(word)).load(std::memory_order_relaxed);
    }
    // As store: a stream of this process may wait on it, and a store_host_word wakes it.
    void nudge(std::uint32_t* word, std::uint32_t value) const { store_host_word(word, value); }
    void add(std::uint32_t* word, std::uint32_t value) const {
        std::atomic_ref(*word).fetch_add(value, std::memory_order_acq_rel);
    }
    bool claim(std::uint32_t* word) const {
        std::uint32_t expected = 0;
        return std::atomic_ref(*word).compare_exchange_strong(expected, 1u);
    }
    template <typename V>
    void put(V* field, V value) const {
        std::atomic_ref(*field).store(value, std::memory_order_release);
    }
    // Polled as the ipc words are on the CPU path (a spin, then pauses up to 1 ms), so a long
    // wait does not take a core from the peer it waits for.
    bool wait(const std::uint32_t* word, std::uint32_t value, std::uint64_t timeout_ns) const {
        try {
            wait_host_word(word, value,
                           std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::nanoseconds(timeout_ns)),
                           "", std::chrono::microseconds(1000));
            return true;
        } catch (const Error&) {
            return false;  // the role names the wait itself
        }
    }
    template <typename T>
    void run_a(Span<T> x, std::uint64_t step, std::uint32_t seed, TensorForm form) const {
        const Share mine = share_of(x.size(), index, blocks);
        for (std::size_t i = mine.begin; i < mine.end; ++i) {
            x[i] = form_value<T>(step, static_cast<std::uint32_t>(i), seed, form);
        }
    }
    template <typename T>
    void run_b(Span<const T> x, Span<T> y, T alpha, std::uint64_t step, std::uint32_t seed,
               TensorForm expected, Counter* x_mismatches) const {
        const Share mine = share_of(x.size(), index, blocks);
        Counter bad = 0;
        for (std::size_t i = mine.begin; i < mine.end; ++i) {
            const T xi = x[i];
            bad += xi != form_value<T>(step, static_cast<std::uint32_t>(i), seed, expected);
            y[i] = b_value(alpha, xi);
        }
        if (bad != 0) std::atomic_ref(*x_mismatches).fetch_add(bad, std::memory_order_relaxed);
    }
};

// The role's pass on the calling thread (block 0) and a thread for each further block, joined
// before it returns: every block's waits are bounded, so the join is too.
template <class Args, class Step>
void run_host_role(const Args& args, Step step) {
    const std::uint32_t blocks = args.role.blocks;
    const auto run_block = [&args, step, blocks](std::uint32_t b) {
        HostHands hands{b, blocks};
        handoff::run_role(hands, args.role, [&](std::int64_t s) { return step(hands, args, s); });
    };
    std::vector<std::thread> others;
    for (std::uint32_t b = 1; b < blocks; ++b) others.emplace_back(run_block, b);
    run_block(0);
    for (std::thread& other : others) other.join();
}

}  // namespace

const char* handoff_wait_text(HandOffWait wait) {
    switch (wait) {
        case HandOffWait::release:
            return "waiting for the consumer to release a slot";
        case HandOffWait::arrival:
            return "waiting for the producer's tensor";
        case HandOffWait::c_done:
            return "waiting for the step's C";
        case HandOffWait::y_copied:
            return "waiting for the host to copy a y slot out";
        case HandOffWait::go:
            return "waiting for the role's first block to start the step";
        case HandOffWait::gather:
            return "waiting for the role's other blocks to finish the step";
        case HandOffWait::none:
            break;
    }
    return "no wait";
}

std::uint32_t handoff_blocks(Backend backend, std::uint64_t elements, std::size_t value_bytes,
                             std::int64_t cap) {
    const std::uint64_t vectors = (elements * value_bytes + 15) / 16;
    const std::uint64_t filled =
        std::max<std::uint64_t>(1, (vectors + kHandOffThreads - 1) / kHandOffThreads);
    std::uint64_t most = cap > 0 ? static_cast<std::uint64_t>(cap) : 1;
#if defined(GPURELAY_HAVE_CUDA)
    if (backend == Backend::cuda && cap == 0) most = cuda::sm_count();
#else
    (void)backend;
#endif
    return static_cast<std::uint32_t>(std::min(filled, most));
}

void check_handoff_fits(Backend backend, std::uint32_t producer_blocks,
                        std::uint32_t consumer_blocks) {
    if (backend != Backend::cuda) return;
#if defined(GPURELAY_HAVE_CUDA)
    const std::uint64_t capacity = cuda::handoff_capacity();
    if (std::uint64_t{producer_blocks} + consumer_blocks > capacity) {
        throw usage_error("launch = \"device\": the producer's " + std::to_string(producer_blocks) +
                          " and the consumer's " + std::to_string(consumer_blocks) +
                          " blocks cannot all be resident on this GPU, which holds " +
                          std::to_string(capacity) + " of them at once (lower device_blocks)");
    }
#else
    (void)producer_blocks;
    (void)consumer_blocks;
#endif
}

template <typename T>
void launch_producer_role(const ProducerArgs<T>& args, Stream& stream) {
    if (stream.backend() == Backend::host) {
        dynamic_cast<HostStream&>(stream).enqueue([args] {
            run_host_role(args, [](HostHands& h, const ProducerArgs<T>& a, std::int64_t s) {
                return handoff::producer_step(h, a, s);
            });
        });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_producer_role(args, cuda_handle(stream));
#else
    throw runtime_error("CUDA stream in a build without CUDA");
#endif
}

template <typename T>
void launch_consumer_role(const ConsumerArgs<T>& args, Stream& stream) {
    if (stream.backend() == Backend::host) {
        dynamic_cast<HostStream&>(stream).enqueue([args] {
            run_host_role(args, [](HostHands& h, const ConsumerArgs<T>& c, std::int64_t s) {
                return handoff::consumer_step(h, c, s);
            });
        });
        return;
    }
#if defined(GPURELAY_HAVE_CUDA)
    cuda::run_consumer_role(args, cuda_handle(stream));
#else
    throw runtime_error("CUDA stream in a build without CUDA");
#endif
}

template void launch_producer_role<float>(const ProducerArgs<float>&, Stream&);
template void launch_producer_role<double>(const ProducerArgs<double>&, Stream&);
template void launch_consumer_role<float>(const ConsumerArgs<float>&, Stream&);
template void launch_consumer_role<double>(const ConsumerArgs<double>&, Stream&);

}  // namespace gpurelay
