// The device-driven hand-off's two roles in one process, on the CPU path's host twins and, where a
// GPU is visible, on the persistent CUDA kernels (skipped, saying so, where none is): every step
// handed over and checked, the flags' counts after a pass (in the words and stored back home), a
// stop that ends both roles at the same step, each wait that runs out naming itself and its step,
// and a written step's y slot held for its copy.
#include "kernels/handoff.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/formula.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr std::uint32_t kSeed = 4242;
constexpr float kAlpha = 2.0f;

// One process's pair: the consumer's slots, their flags (each side's home, in pinned memory, as
// the ipc transport keeps them), y, each role's status, workspace and stamps, on `device`, with
// the roles' streams.
struct Rig {
    Rig(Device& d, std::uint32_t depth_, std::uint64_t elements_, std::int64_t steps_)
        : device(d), depth(depth_), elements(elements_), steps(steps_) {
        const std::size_t bytes = elements * sizeof(float);
        for (std::uint32_t k = 0; k < depth; ++k) {
            slots.push_back(device.allocate(bytes));
            y.push_back(device.allocate(bytes));
        }
        words = device.allocate(2 * 64 * kMaxSlots);
        homes = device.allocate_host(2 * sizeof(SlotFlags));
        control = device.allocate(4 * 64);
        workspace = device.allocate(2 * kHandOffWorkspaceBytes);
        status = device.allocate_host(2 * sizeof(RoleStatus));
        produced = device.allocate(static_cast<std::size_t>(steps) * sizeof(ProducerStamps));
        consumed = device.allocate(static_cast<std::size_t>(steps) * sizeof(ConsumerStamps));
        written = device.allocate(static_cast<std::size_t>(steps));
        producer_stream = device.make_stream(true, "producer role");
        consumer_stream = device.make_stream(true, "consumer role");
        io = device.make_stream(false, "io");
        for (Buffer* b : {&words, &control, &workspace, &consumed, &written}) {
            device.fill_async(b->data(), 0, b->bytes(), *io);
        }
        std::memset(status.data(), 0, status.bytes());
        io->synchronize();
        for (const bool consumer : {false, true}) {
            SlotFlags& f = home(consumer);
            f = SlotFlags{};
            f.slots = depth;
            f.ahead = consumer ? 1 : 0;
            f.reuse_wait = true;
            for (std::uint32_t k = 0; k < depth; ++k) {
                f.slot[k] = slots[k].data();
                f.inbound[k] = consumer ? arrived(k) : released(k);
                f.outbound[k] = consumer ? released(k) : arrived(k);
            }
        }
    }
    // Both sides' flags and words after `uses` uses of every slot (a pass that resumes).
    void start_at(std::uint32_t uses) {
        for (std::uint32_t k = 0; k < depth; ++k) {
            put(arrived(k), uses);
            put(released(k), uses);
            home(false).uses[k] = home(true).uses[k] = uses;
        }
    }

    std::uint32_t* word(std::size_t i) const { return words.as<std::uint32_t>().data() + 16 * i; }
    std::uint32_t* arrived(std::uint32_t k) const { return word(k); }
    std::uint32_t* released(std::uint32_t k) const { return word(kMaxSlots + k); }
    SlotFlags& home(bool consumer) const { return homes.as<SlotFlags>()[consumer ? 1 : 0]; }
    // stop, gate, c_done, y_copied
    std::uint32_t* control_word(std::size_t i) const {
        return control.as<std::uint32_t>().data() + 16 * i;
    }
    RoleStatus& role_status(bool consumer) const {
        return status.as<RoleStatus>().data()[consumer ? 1 : 0];
    }

    RoleArgs role(std::uint32_t blocks, bool consumer) const {
        RoleArgs r;
        r.home = &home(consumer);
        r.flags = *r.home;
        r.first = first;
        r.steps = steps;
        r.elements = elements;
        r.seed = kSeed;
        r.blocks = blocks;
        r.timeout_ns = timeout_ms * 1000000ull;
        r.status = &role_status(consumer);
        r.workspace =
            static_cast<char*>(workspace.data()) + (consumer ? kHandOffWorkspaceBytes : 0);
        return r;
    }
    ProducerArgs<float> producer(std::uint32_t blocks) const {
        ProducerArgs<float> p;
        p.role = role(blocks, false);
        p.stop = control_word(0);
        p.stamps = produced.as<ProducerStamps>().data();
        return p;
    }
    ConsumerArgs<float> consumer(std::uint32_t blocks) const {
        ConsumerArgs<float> c;
        c.role = role(blocks, true);
        c.alpha = kAlpha;
        for (std::uint32_t k = 0; k < depth; ++k) c.y[k] = y[k].as<float>().data();
        c.gate = control_word(1);
        c.c_done = control_word(2);
        c.y_copied = control_word(3);
        c.written = static_cast<const std::uint8_t*>(written.data());
        c.stamps = consumed.as<ConsumerStamps>().data();
        return c;
    }

    // Blocks until both roles (or the one launched) have ended; false after 30 s.
    bool wait_ended(bool producer, bool consumer) const {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        const auto ended = [&](bool c) {
            return std::atomic_ref(role_status(c).ended).load(std::memory_order_acquire) != 0;
        };
        while ((producer && !ended(false)) || (consumer && !ended(true))) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        producer_stream->synchronize();
        consumer_stream->synchronize();
        return true;
    }

    template <typename V>
    std::vector<V> read(const Buffer& from, std::size_t count) const {
        std::vector<V> out(count);
        device.copy_async(out.data(), from.data(), count * sizeof(V), *io);
        io->synchronize();
        return out;
    }
    std::uint32_t peek(const std::uint32_t* word) const {
        std::uint32_t value = 0;
        device.copy_async(&value, word, sizeof value, *io);
        io->synchronize();
        return value;
    }
    void put(std::uint32_t* target, std::uint32_t value) const {
        device.write_word(target, value, *io);
        io->synchronize();
    }

    Device& device;
    std::uint32_t depth;
    std::uint64_t elements;
    std::int64_t steps, first = 0;
    std::uint64_t timeout_ms = 20000;
    std::vector<Buffer> slots, y;
    Buffer words, homes, control, workspace, status, produced, consumed, written;
    std::unique_ptr<Stream> producer_stream, consumer_stream, io;
};

class HandOff : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        if (GetParam() == Backend::host) {
            device_ = make_host_device(std::chrono::seconds(30));
            return;
        }
        if (cuda_device_count() == 0) {
            GTEST_SKIP() << (cuda_built() ? "no GPU visible" : "built without CUDA")
                         << ": the persistent CUDA kernels' tests run where one is";
        }
        device_ = make_cuda_device(0);
    }
    std::unique_ptr<Device> device_;
};

TEST_P(HandOff, EveryStepIsHandedOverAndChecked) {
    for (const std::uint32_t depth : {1u, 2u, 3u}) {
        for (const std::uint32_t blocks : {1u, 3u}) {
            Rig rig(*device_, depth, 3001, 23);
            launch_role(rig.consumer(blocks), *rig.consumer_stream);
            launch_role(rig.producer(blocks), *rig.producer_stream);
            ASSERT_TRUE(rig.wait_ended(true, true)) << "depth " << depth << " blocks " << blocks;
            for (const bool consumer : {false, true}) {
                const RoleStatus& st = rig.role_status(consumer);
                EXPECT_EQ(st.failed_wait, 0u);
                EXPECT_EQ(st.end_step, 23);
                EXPECT_EQ(st.done, 23);
            }
            const auto produced = rig.read<ProducerStamps>(rig.produced, 23);
            const auto consumed = rig.read<ConsumerStamps>(rig.consumed, 23);
            for (std::size_t s = 0; s < 23; ++s) {
                EXPECT_EQ(consumed[s].x_mismatches, 0u) << "step " << s;
                // B saw the tensor only after A was done with it, and A wrote a slot again only
                // after B of its use before had released it.
                EXPECT_GE(consumed[s].arrived, produced[s].a_end) << "step " << s;
                EXPECT_LE(consumed[s].ready, consumed[s].b_end) << "step " << s;
                if (s >= depth) EXPECT_GE(produced[s].a_start, consumed[s - depth].b_end);
            }
            // The last step's y is alpha times A's tensor of that step, every value.
            const auto y = rig.read<float>(rig.y[22 % depth], 3001);
            for (std::uint32_t i = 0; i < 3001; ++i) {
                ASSERT_EQ(y[i], kAlpha * a_value<float>(22, i, kSeed)) << i;
            }
            // Each slot's words count its uses in both directions, and each side stored its
            // count of them back home.
            for (std::uint32_t k = 0; k < depth; ++k) {
                const auto uses = static_cast<std::uint32_t>((23 - k + depth - 1) / depth);
                EXPECT_EQ(rig.peek(rig.arrived(k)), uses);
                EXPECT_EQ(rig.peek(rig.released(k)), uses);
                EXPECT_EQ(rig.home(false).uses[k], uses);
                EXPECT_EQ(rig.home(true).uses[k], uses);
            }
        }
    }
}

TEST_P(HandOff, APassCountsOnFromTheFlagsItFinds) {
    // A resumed pass from step 5, its slots used 7 times each already.
    Rig rig(*device_, 2, 1000, 12);
    rig.first = 5;
    rig.start_at(7);
    launch_role(rig.consumer(1), *rig.consumer_stream);
    launch_role(rig.producer(1), *rig.producer_stream);
    ASSERT_TRUE(rig.wait_ended(true, true));
    EXPECT_EQ(rig.role_status(true).end_step, 12);
    const auto consumed = rig.read<ConsumerStamps>(rig.consumed, 7);
    for (const ConsumerStamps& s : consumed) EXPECT_EQ(s.x_mismatches, 0u);
    // Steps 5 to 11: slot 0 holds 6, 8 and 10, slot 1 the other four.
    EXPECT_EQ(rig.peek(rig.arrived(0)), 10u);
    EXPECT_EQ(rig.peek(rig.released(0)), 10u);
    EXPECT_EQ(rig.peek(rig.arrived(1)), 11u);
    EXPECT_EQ(rig.peek(rig.released(1)), 11u);
    for (const bool consumer : {false, true}) {
        EXPECT_EQ(rig.home(consumer).uses[0], 10u);
        EXPECT_EQ(rig.home(consumer).uses[1], 11u);
    }
}

TEST_P(HandOff, AStopEndsBothRolesAfterTheSameStep) {
    // The consumer is held at step 0 by its C (c_done never raised): the producer fills both
    // slots and waits for a release at step 2. The stop comes then; C is let through; the
    // producer reads the stop at step 3, and both end there.
    Rig rig(*device_, 2, 1000, 40);
    ConsumerArgs<float> c = rig.consumer(1);
    c.has_c = true;
    c.overlap = true;
    launch_role(c, *rig.consumer_stream);
    launch_role(rig.producer(1), *rig.producer_stream);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::atomic_ref(rig.role_status(false).done).load() < 2) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
        std::this_thread::yield();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the producer waits at step 2
    rig.put(rig.control_word(0), 1);
    rig.put(rig.control_word(2), 1000);  // every C done
    ASSERT_TRUE(rig.wait_ended(true, true));
    EXPECT_EQ(rig.role_status(false).end_step, 3);
    EXPECT_EQ(rig.role_status(true).end_step, 3);
    // The counts are the uses made: steps 0 and 2 in slot 0, step 1 in slot 1 (not the stop).
    for (const bool consumer : {false, true}) {
        EXPECT_EQ(rig.home(consumer).uses[0], 2u);
        EXPECT_EQ(rig.home(consumer).uses[1], 1u);
    }
    EXPECT_EQ(rig.role_status(true).failed_wait, 0u);
    const auto consumed = rig.read<ConsumerStamps>(rig.consumed, 3);
    for (const ConsumerStamps& s : consumed) EXPECT_EQ(s.x_mismatches, 0u);
    // With overlap, the consumer let C of each next step start after its B.
    EXPECT_EQ(rig.peek(rig.control_word(1)), 4u);
}

TEST_P(HandOff, AWaitThatRunsOutNamesItselfAndItsStep) {
    {
        // A consumer with no producer: its first wait, for step 0's tensor.
        Rig rig(*device_, 2, 1000, 10);
        rig.timeout_ms = 100;
        launch_role(rig.consumer(3), *rig.consumer_stream);
        ASSERT_TRUE(rig.wait_ended(false, true));
        const RoleStatus& st = rig.role_status(true);
        EXPECT_EQ(static_cast<HandOffWait>(st.failed_wait), HandOffWait::arrival);
        EXPECT_EQ(st.failed_step, 0);
        EXPECT_EQ(st.end_step, 0);
    }
    {
        // A producer with no consumer, depth 1: step 1 waits for step 0's release.
        Rig rig(*device_, 1, 1000, 10);
        rig.timeout_ms = 100;
        launch_role(rig.producer(1), *rig.producer_stream);
        ASSERT_TRUE(rig.wait_ended(true, false));
        const RoleStatus& st = rig.role_status(false);
        EXPECT_EQ(static_cast<HandOffWait>(st.failed_wait), HandOffWait::release);
        EXPECT_EQ(st.failed_step, 1);
        EXPECT_EQ(st.done, 1);
    }
    EXPECT_STREQ(handoff_wait_text(HandOffWait::arrival), "waiting for the producer's tensor");
}

TEST_P(HandOff, AWrittenStepsSlotWaitsForItsCopy) {
    // Depth 1 and step 0 written: B of step 1 overwrites its y slot only once y_copied says step
    // 0 is out.
    for (const bool copied : {false, true}) {
        Rig rig(*device_, 1, 1000, 4);
        rig.timeout_ms = copied ? 20000 : 100;
        const std::uint8_t first_written = 1;
        rig.device.copy_async(rig.written.data(), &first_written, 1, *rig.io);
        rig.io->synchronize();
        if (copied) rig.put(rig.control_word(3), 1);
        launch_role(rig.consumer(1), *rig.consumer_stream);
        launch_role(rig.producer(1), *rig.producer_stream);
        ASSERT_TRUE(rig.wait_ended(true, true));
        const RoleStatus& st = rig.role_status(true);
        if (copied) {
            EXPECT_EQ(st.end_step, 4);
            EXPECT_EQ(st.failed_wait, 0u);
        } else {
            EXPECT_EQ(static_cast<HandOffWait>(st.failed_wait), HandOffWait::y_copied);
            EXPECT_EQ(st.failed_step, 1);
        }
    }
}

TEST_P(HandOff, BlocksAsTheTensorFillsThemAndOnlyWhatFits) {
    // 16-byte vectors, 256 threads a block: 4 KiB fills one block, 64 Mi floats many, at most
    // the cap (0: one per SM on a GPU, one thread on the CPU path).
    EXPECT_EQ(handoff_blocks(GetParam(), 1024, 4, 0), 1u);
    EXPECT_EQ(handoff_blocks(GetParam(), 3001, 4, 3), 3u);
    EXPECT_EQ(handoff_blocks(GetParam(), 3001, 4, 8), 3u);
    EXPECT_EQ(handoff_blocks(GetParam(), 64u << 20, 4, 5), 5u);
    EXPECT_NO_THROW(check_handoff_fits(GetParam(), 1, 1));
    if (GetParam() == Backend::host) {
        EXPECT_EQ(handoff_blocks(GetParam(), 64u << 20, 4, 0), 1u);
        EXPECT_NO_THROW(check_handoff_fits(GetParam(), 4096, 4096));
        return;
    }
    EXPECT_GT(handoff_blocks(GetParam(), 64u << 20, 4, 0), 1u);  // one per SM
    // More blocks than the GPU holds at once would wait for ever for each other: refused.
    try {
        check_handoff_fits(GetParam(), 1u << 20, 1u << 20);
        ADD_FAILURE() << "a million blocks a role fit";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("cannot all be resident"), std::string::npos);
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, HandOff, ::testing::Values(Backend::host, Backend::cuda),
                         [](const auto& info) {
                             return std::string(info.param == Backend::host ? "host" : "cuda");
                         });

}  // namespace
}  // namespace gpurelay
