// The CPU path's collectives through CollectiveCall::run, under mpirun -np 1, 3 and 4:
// every group size that divides the world, the host and the host-staged collective, pieces with
// a tail. A broadcast's receivers check every byte of the root's message (into buffers poisoned
// first); an all-reduce's ranks each add their share (A's all-reduce form) and check that the sum
// is the formula's, exactly, in float32 and float64.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/formula.hpp"
#include "mpi/pairing.hpp"
#include "mpi_test.hpp"
#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "transport/transport.hpp"

namespace gpurelay {
namespace {

constexpr std::chrono::milliseconds kTimeout{30000};

// The group sizes that divide the world.
std::vector<int> group_sizes() {
    std::vector<int> sizes;
    for (int n = 1; n <= test::world_size(); ++n) {
        if (test::world_size() % n == 0) sizes.push_back(n);
    }
    return sizes;
}

using MakeCollective = std::function<std::unique_ptr<CollectiveCall>(
    MPI_Comm, Collective, ReduceType, Device&, const TransportOptions&)>;

struct Kind {
    std::string name;
    MakeCollective make;
};

std::vector<Kind> kinds() {
    return {
        {"host", make_mpi_host_collective},
        {"staged", make_mpi_staged_collective},
    };
}

// This rank's group of `group_size` consecutive ranks, as its own communicator.
struct Group {
    Group(int group_size, Collective op)
        : placement(place_groups(test::world_rank(), test::world_size(), group_size, op,
                                 kMaxAllreduceGroup)) {
        MPI_Comm_split(MPI_COMM_WORLD, placement.group, placement.group_rank, &comm);
    }
    ~Group() { MPI_Comm_free(&comm); }
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;

    PairPlacement placement;
    MPI_Comm comm = MPI_COMM_NULL;
};

// Byte i of message m of group g: groups broadcast different messages at once.
std::uint8_t pattern(std::size_t i, int message, int group) {
    return static_cast<std::uint8_t>(
        (i * 131u + static_cast<unsigned>(message) * 17u + static_cast<unsigned>(group) * 101u) &
        0xff);
}

// `messages` broadcasts one after another on one stream and buffer, as the pipeline's slots are
// reused; the root also receives its own copy on odd messages (as a group of one always does).
void broadcast_messages(const Kind& kind, int group_size, std::size_t bytes, std::size_t chunk,
                        int messages) {
    const Group group(group_size, Collective::broadcast);
    const PairPlacement& p = group.placement;
    const bool root = p.group_rank == 0;
    auto device = make_host_device(kTimeout);
    const TransportOptions options{bytes, chunk, kTimeout};
    auto transport =
        kind.make(group.comm, Collective::broadcast, ReduceType::float32, *device, options);
    auto stream = device->make_stream(true, "comm");
    Buffer out = device->allocate(bytes + 1);
    Buffer in = device->allocate(bytes + 1);
    auto* out_bytes = static_cast<std::uint8_t*>(out.data());
    auto* in_bytes = static_cast<std::uint8_t*>(in.data());
    for (int m = 0; m < messages; ++m) {
        const bool receives = !root || m % 2 == 1;
        if (root) {
            for (std::size_t i = 0; i < bytes; ++i) out_bytes[i] = pattern(i, m, p.group);
        }
        std::memset(in_bytes, 0xee, bytes + 1);  // one byte past the message stays untouched
        transport->run(root ? out.data() : nullptr, receives ? in.data() : nullptr, bytes, *stream);
        stream->synchronize();
        if (receives) {
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < bytes; ++i) wrong += in_bytes[i] != pattern(i, m, p.group);
            EXPECT_EQ(wrong, 0u) << kind.name << " group of " << group_size << ", message " << m
                                 << " of " << bytes << " bytes, group rank " << p.group_rank;
            EXPECT_EQ(in_bytes[bytes], 0xee) << kind.name << ": wrote past the message";
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CpuCollectives, BroadcastsReachEveryReceiverWholeAndInOrder) {
    for (const Kind& kind : kinds()) {
        for (const int n : group_sizes()) {
            broadcast_messages(kind, n, 10007, 1 << 20, 4);
            broadcast_messages(kind, n, 100003, 4096, 3);  // pieces with a tail
        }
    }
}

// Each rank's share of step m: A in its all-reduce form; the sum must be the formula's exactly.
template <typename T>
void allreduce_messages(const Kind& kind, int group_size, std::size_t elements, std::size_t chunk,
                        int messages) {
    const Group group(group_size, Collective::allreduce);
    const PairPlacement& p = group.placement;
    const std::size_t bytes = elements * sizeof(T);
    auto device = make_host_device(kTimeout);
    const TransportOptions options{bytes, chunk, kTimeout};
    const ReduceType type = sizeof(T) == 4 ? ReduceType::float32 : ReduceType::float64;
    auto transport = kind.make(group.comm, Collective::allreduce, type, *device, options);
    auto stream = device->make_stream(true, "comm");
    std::vector<T> share(elements), sum(elements);
    for (int m = 0; m < messages; ++m) {
        const auto step = static_cast<std::uint64_t>(m);
        for (std::size_t i = 0; i < elements; ++i) {
            share[i] = form_value<T>(step, static_cast<std::uint32_t>(i), 77,
                                     allreduce_share(p.group_rank));
        }
        std::fill(sum.begin(), sum.end(), static_cast<T>(-1));
        transport->run(share.data(), sum.data(), bytes, *stream);
        stream->synchronize();
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < elements; ++i) {
            wrong += sum[i] != form_value<T>(step, static_cast<std::uint32_t>(i), 77,
                                             allreduce_sum(group_size));
        }
        EXPECT_EQ(wrong, 0u) << kind.name << " " << sizeof(T) * 8 << "-bit, group of " << group_size
                             << ", message " << m << " of " << elements;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CpuCollectives, AllreduceSumsAreExactInBothTypes) {
    for (const Kind& kind : kinds()) {
        for (const int n : group_sizes()) {
            allreduce_messages<float>(kind, n, 10007, 1 << 20, 3);
            allreduce_messages<double>(kind, n, 10007, 1 << 20, 2);
            allreduce_messages<float>(kind, n, 100003, 4096, 2);  // pieces with a tail
            allreduce_messages<double>(kind, n, 1001, 20, 2);     // a chunk of 2.5 elements
        }
    }
}

TEST(CpuCollectives, NamesSayWhatTheyAre) {
    auto device = make_host_device(kTimeout);
    const TransportOptions options{64, 64, kTimeout};
    EXPECT_EQ(make_mpi_host_collective(MPI_COMM_WORLD, Collective::broadcast, ReduceType::float32,
                                       *device, options)
                  ->name(),
              "mpi broadcast (host memory)");
    EXPECT_EQ(make_mpi_staged_collective(MPI_COMM_WORLD, Collective::allreduce, ReduceType::float64,
                                         *device, options)
                  ->name(),
              "mpi allreduce (host-staged)");
}

// A misuse is refused before anything is queued: an all-reduce needs both sides; only the root
// of a broadcast sends.
TEST(CpuCollectives, RefusesSidesThatDoNotFit) {
    auto device = make_host_device(kTimeout);
    const TransportOptions options{64, 64, kTimeout};
    auto allreduce = make_mpi_host_collective(MPI_COMM_SELF, Collective::allreduce,
                                              ReduceType::float32, *device, options);
    auto stream = device->make_stream(false, "a");
    float data[16] = {};
    EXPECT_THROW(allreduce->run(data, nullptr, sizeof data, *stream), Error);
    EXPECT_THROW(allreduce->run(nullptr, data, sizeof data, *stream), Error);
    Group group(test::world_size(), Collective::broadcast);
    auto broadcast = make_mpi_host_collective(group.comm, Collective::broadcast,
                                              ReduceType::float32, *device, options);
    if (group.placement.group_rank != 0) {
        EXPECT_THROW(broadcast->run(data, data, sizeof data, *stream), Error);
    }
    if (group.placement.group_rank == 0) {
        EXPECT_THROW(broadcast->run(nullptr, data, sizeof data, *stream), Error);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

// The slot protocol over a collective, as the pipeline drives it: the root writes where acquire
// says and publishes; every receiver (the root too, in a group of one) awaits and releases. Two
// slots, reused; the root's A and the receive on two streams, as with overlap.
TEST(CpuCollectives, TheSlotProtocolCarriesBroadcastsThroughReusedSlots) {
    for (const int n : group_sizes()) {
        const PairPlacement p = place_groups(test::world_rank(), test::world_size(), n,
                                             Collective::broadcast, kMaxAllreduceGroup);
        MPI_Comm group = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, p.group, p.group_rank, &group);
        auto device = make_host_device(kTimeout);
        constexpr std::size_t kBytes = 1003;
        TransportOptions options{kBytes, 1 << 20, kTimeout};
        options.slots = 2;
        auto transport = make_collective_transport(
            make_mpi_host_collective(group, Collective::broadcast, ReduceType::float32, *device,
                                     options),
            p, *device, options);
        MPI_Comm_free(&group);
        auto produce = device->make_stream(false, "producer");
        auto receive = device->make_stream(true, "comm");
        for (int m = 0; m < 5; ++m) {
            const std::size_t k = static_cast<std::size_t>(m) % options.slots;
            if (p.role != Role::consumer) {
                auto* out = static_cast<std::uint8_t*>(transport->acquire(k, *produce));
                produce->synchronize();
                for (std::size_t i = 0; i < kBytes; ++i) out[i] = pattern(i, m, p.group);
                transport->publish(k, *produce);
            }
            if (p.role != Role::producer) {
                const auto* in = static_cast<const std::uint8_t*>(transport->await(k, *receive));
                receive->synchronize();
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < kBytes; ++i) wrong += in[i] != pattern(i, m, p.group);
                EXPECT_EQ(wrong, 0u) << "group of " << n << ", message " << m;
                transport->release(k, *receive);
            }
            produce->synchronize();
            receive->synchronize();
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

// A rank that plays both sides (a group of one) writes with A on one stream and runs the
// collective on the other. Everything is queued at once, one stream held 50 ms at the start: with
// the producer's held, each collective must wait for its A (else it reads the poisoned slot); with
// the receiver's held, each A must wait for the collective to have read the slot's last message.
TEST(CpuCollectives, ARankPlayingBothSidesWritesAndReadsEachSlotInTurn) {
    constexpr int kMessages = 6;
    constexpr std::size_t kBytes = 1003;
    for (const bool hold_producer : {true, false}) {
        const Group group(1, Collective::broadcast);
        const int g = group.placement.group;
        auto device = make_host_device(kTimeout);
        TransportOptions options{kBytes, 1 << 20, kTimeout};
        options.slots = 2;
        auto transport = make_collective_transport(
            make_mpi_host_collective(group.comm, Collective::broadcast, ReduceType::float32,
                                     *device, options),
            group.placement, *device, options);
        auto produce = device->make_stream(false, "producer");
        auto receive = device->make_stream(true, "comm");
        device->enqueue_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); },
                             hold_producer ? *produce : *receive);
        std::vector<std::size_t> wrong(kMessages, kBytes);
        for (int m = 0; m < kMessages; ++m) {
            const std::size_t k = static_cast<std::size_t>(m) % options.slots;
            auto* out = static_cast<std::uint8_t*>(transport->acquire(k, *produce));
            device->enqueue_host(
                [out, m, g] {
                    for (std::size_t i = 0; i < kBytes; ++i) out[i] = pattern(i, m, g);
                },
                *produce);
            transport->publish(k, *produce);
            const auto* in = static_cast<const std::uint8_t*>(transport->await(k, *receive));
            device->enqueue_host(
                [in, m, g, &wrong] {
                    std::size_t count = 0;
                    for (std::size_t i = 0; i < kBytes; ++i) count += in[i] != pattern(i, m, g);
                    wrong[static_cast<std::size_t>(m)] = count;
                },
                *receive);
            transport->release(k, *receive);
        }
        produce->synchronize();
        receive->synchronize();
        for (int m = 0; m < kMessages; ++m) {
            EXPECT_EQ(wrong[static_cast<std::size_t>(m)], 0u)
                << (hold_producer ? "producer" : "receiver") << " held, message " << m;
        }
    }
}

}  // namespace
}  // namespace gpurelay
