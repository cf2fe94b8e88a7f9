// The CPU path's transports through the slot protocol (acquire, publish, await, release), under
// mpirun: -np 2 sends from rank 0 to rank 1, -np 1 sends a rank to itself (both sides, on two
// streams). Each message is a pattern the receiver checks byte for byte, in slots poisoned
// first; the receiver releases each slot before its next use.
#include "transport/transport.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi/pairing.hpp"
#include "runtime/device.hpp"

namespace gpurelay {
namespace {

constexpr std::chrono::milliseconds kTimeout{30000};

int world(int (*query)(MPI_Comm, int*)) {
    int value = 0;
    query(MPI_COMM_WORLD, &value);
    return value;
}

// Byte i of message m.
std::uint8_t pattern(std::size_t i, int message) {
    return static_cast<std::uint8_t>((i * 131u + static_cast<unsigned>(message) * 17u) & 0xff);
}

struct Case {
    std::string name;
    std::size_t bytes;
    std::size_t chunk;
    std::function<std::unique_ptr<Transport>(const PairPlacement&, Device&,
                                             const TransportOptions&)>
        make;
};

// One rank's side(s) of case `c` through `slots` slots, with a stream for each side.
struct Ends {
    Ends(const Case& c, std::size_t slots)
        : placement(place_pairs(world(MPI_Comm_rank), world(MPI_Comm_size), false)),
          sender(placement.role != Role::consumer),
          receiver(placement.role != Role::producer),
          bytes(c.bytes),
          device(make_host_device(kTimeout)) {
        TransportOptions options{c.bytes, c.chunk, kTimeout};
        options.slots = slots;
        transport = c.make(placement, *device, options);
        send_stream = device->make_stream(false, "send");
        recv_stream = device->make_stream(true, "recv");
    }
    // The producer writes message m where slot k's next tensor goes, and sends it.
    void send(std::size_t k, int m) {
        auto* out = static_cast<std::uint8_t*>(transport->acquire(k, *send_stream));
        send_stream->synchronize();  // what A would wait for
        for (std::size_t i = 0; i < bytes; ++i) out[i] = pattern(i, m);
        transport->publish(k, *send_stream);
    }
    // Bytes of `in` that differ from message m.
    std::size_t wrong(const std::uint8_t* in, int m) const {
        std::size_t count = 0;
        for (std::size_t i = 0; i < bytes; ++i) count += in[i] != pattern(i, m);
        return count;
    }

    PairPlacement placement;
    bool sender, receiver;
    std::size_t bytes;
    std::unique_ptr<Device> device;
    std::unique_ptr<Transport> transport;
    std::unique_ptr<Stream> send_stream, recv_stream;
};

// Sends `messages` messages of case `c` one after another through two slots, as the pipeline
// reuses them: each must arrive whole and in order. A slot the receiver has read is released
// before its next use.
void exchange_messages(const Case& c, int messages) {
    constexpr std::size_t kSlots = 2;
    Ends ends(c, kSlots);
    for (int m = 0; m < messages; ++m) {
        const std::size_t k = static_cast<std::size_t>(m) % kSlots;
        if (ends.sender) ends.send(k, m);
        if (ends.receiver) {
            const auto* in =
                static_cast<const std::uint8_t*>(ends.transport->await(k, *ends.recv_stream));
            ends.recv_stream->synchronize();
            EXPECT_EQ(ends.wrong(in, m), 0u)
                << c.name << ": message " << m << " of " << c.bytes << " bytes";
            ends.transport->release(k, *ends.recv_stream);
        }
        ends.send_stream->synchronize();
        ends.recv_stream->synchronize();
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

std::vector<Case> cases() {
    auto host = [](const PairPlacement& p, Device& d, const TransportOptions& o) {
        return make_mpi_host_transport(MPI_COMM_WORLD, p, d, o);
    };
    auto staged = [](const PairPlacement& p, Device& d, const TransportOptions& o) {
        return make_mpi_staged_transport(MPI_COMM_WORLD, p, d, o);
    };
    auto ipc = [](const PairPlacement& p, Device& d, const TransportOptions& o) {
        return make_ipc_transport(MPI_COMM_WORLD, p, d, o);
    };
    return {
        {"host, one piece", 10007, 1 << 20, host},
        {"host, pieces with a tail", 10007, 4096, host},
        {"staged, one piece", 10007, 1 << 20, staged},
        {"staged, pieces with a tail", 100003, 4096, staged},
        {"staged, pieces of one byte", 37, 1, staged},
        {"ipc", 10007, 1 << 20, ipc},
    };
}

TEST(CpuTransports, MessagesArriveWholeAndInOrder) {
    for (const Case& c : cases()) exchange_messages(c, 4);
}

// How long a test's reader holds a slot, or its receive stream holds the receives queued behind:
// a write that did not wait for it lands well within this on the CPU path.
constexpr std::chrono::milliseconds kHold{50};

// Three messages through one slot, as the pipeline's B reads it: a reader on a stream of its own
// holds the slot for kHold and then counts what differs from the message, and releases it there.
// The next message's receive (or copy) is queued meanwhile, and must wait for that release, and
// only that one (a release that let the slot go a use early lets the third over the second).
void each_message_waits_for_the_reader(const Case& c) {
    constexpr int kMessages = 3;
    Ends ends(c, 1);
    auto reader = ends.device->make_stream(false, "reader");
    auto arrived = ends.device->make_event(EventUse::ordering);
    std::vector<std::size_t> wrong_while_read(kMessages, c.bytes);
    for (int m = 0; m < kMessages; ++m) {
        if (ends.sender) ends.send(0, m);
        if (!ends.receiver) continue;
        const auto* in =
            static_cast<const std::uint8_t*>(ends.transport->await(0, *ends.recv_stream));
        arrived->record(*ends.recv_stream);
        reader->wait(*arrived);
        ends.device->enqueue_host(
            [&ends, &wrong_while_read, in, m] {
                std::this_thread::sleep_for(kHold);
                wrong_while_read[static_cast<std::size_t>(m)] = ends.wrong(in, m);
            },
            *reader);
        ends.transport->release(0, *reader);
    }
    if (ends.receiver) {
        reader->synchronize();
        ends.recv_stream->synchronize();
        for (int m = 0; m < kMessages; ++m) {
            EXPECT_EQ(wrong_while_read[static_cast<std::size_t>(m)], 0u)
                << c.name << ": message " << m << " was overwritten while read";
        }
    }
    ends.send_stream->synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CpuTransports, ASlotIsWrittenAgainOnlyAfterItsReaderReleasedIt) {
    for (const Case& c : cases()) each_message_waits_for_the_reader(c);
}

// Four messages into four slots, every receive queued behind a hold on the receive stream while
// the sender sends them one after another: each lands whole in its own slot. So neither side
// reuses a buffer of its own too early (the staged transport's staging buffers: the sender's
// next copy into it waits for MPI to have sent the last message from it; the receiver's proxy
// receives into it again only once the stream has copied the last message out).
void messages_queued_behind_a_held_receive(const Case& c) {
    constexpr int kMessages = 4;
    Ends ends(c, kMessages);
    std::vector<const std::uint8_t*> landed;
    if (ends.receiver) {
        ends.device->enqueue_host([] { std::this_thread::sleep_for(kHold); }, *ends.recv_stream);
        for (std::size_t k = 0; k < kMessages; ++k) {
            landed.push_back(
                static_cast<const std::uint8_t*>(ends.transport->await(k, *ends.recv_stream)));
        }
    }
    for (int m = 0; ends.sender && m < kMessages; ++m) ends.send(static_cast<std::size_t>(m), m);
    if (ends.receiver) {
        ends.recv_stream->synchronize();
        for (std::size_t k = 0; k < kMessages; ++k) {
            EXPECT_EQ(ends.wrong(landed[k], static_cast<int>(k)), 0u)
                << c.name << ": message " << k;
            ends.transport->release(k, *ends.recv_stream);
        }
        ends.recv_stream->synchronize();
    }
    ends.send_stream->synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CpuTransports, MessagesQueuedBehindAHeldReceiveLandWhole) {
    for (const Case& c : cases()) messages_queued_behind_a_held_receive(c);
}

TEST(CpuTransports, AnEmptyMessageCompletes) {
    for (const Case& c : cases()) {
        Case empty = c;
        empty.bytes = 0;
        exchange_messages(empty, 2);
    }
}

TEST(CpuTransports, NamesSayWhatTheyAre) {
    auto device = make_host_device(kTimeout);
    const PairPlacement placement = place_pairs(world(MPI_Comm_rank), world(MPI_Comm_size), false);
    const TransportOptions options{64, 64, kTimeout};
    EXPECT_EQ(make_mpi_host_transport(MPI_COMM_WORLD, placement, *device, options)->name(),
              "mpi (host memory)");
    EXPECT_EQ(make_mpi_staged_transport(MPI_COMM_WORLD, placement, *device, options)->name(),
              "mpi (host-staged)");
}

// --- ipc: the producer copies into the consumer's slot in a shared-memory window ---------------

struct IpcPair {
    explicit IpcPair(std::size_t bytes, std::size_t slots, bool skip_reuse_wait = false)
        : rank(world(MPI_Comm_rank)),
          placement(place_pairs(rank, world(MPI_Comm_size), false)),
          device(make_host_device(kTimeout)),
          landed(slots, nullptr) {
        TransportOptions options{bytes, bytes, kTimeout};
        options.slots = slots;
        options.debug_skip_reuse_wait = skip_reuse_wait;
        transport = make_ipc_transport(MPI_COMM_WORLD, placement, *device, options);
        send_stream = device->make_stream(false, "send");
        recv_stream = device->make_stream(true, "recv");
    }
    bool sender() const { return placement.role != Role::consumer; }
    bool receiver() const { return placement.role != Role::producer; }

    // The producer writes message m where slot k's next tensor goes, and sends it.
    void send(int m, std::size_t k, std::size_t bytes) {
        auto* out = static_cast<std::uint8_t*>(transport->acquire(k, *send_stream));
        send_stream->synchronize();  // what A would wait for
        for (std::size_t i = 0; i < bytes; ++i) out[i] = pattern(i, m);
        transport->publish(k, *send_stream);
    }
    // Queues message m into slot k on this rank's side(s).
    void exchange(int m, std::size_t k, std::size_t bytes) {
        if (sender()) send(m, k, bytes);
        if (receiver())
            landed[k] = static_cast<const std::uint8_t*>(transport->await(k, *recv_stream));
    }
    // Bytes of slot k (consumer) that differ from message m.
    std::size_t wrong_in_slot(std::size_t k, int m, std::size_t bytes) {
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < bytes; ++i) wrong += landed[k][i] != pattern(i, m);
        return wrong;
    }

    int rank;
    PairPlacement placement;
    std::unique_ptr<Device> device;
    std::unique_ptr<Transport> transport;
    std::unique_ptr<Stream> send_stream, recv_stream;
    std::vector<const std::uint8_t*> landed;  // where each slot's last message landed
};

TEST(CpuIpc, MessagesLandInTheirSlotsWholeAndInOrder) {
    constexpr std::size_t kBytes = 10007;
    constexpr std::size_t kSlots = 3;
    IpcPair pair(kBytes, kSlots);
    EXPECT_EQ(pair.transport->name(), "ipc (shared memory)");
    for (int m = 0; m < 8; ++m) {
        const std::size_t k = static_cast<std::size_t>(m) % kSlots;
        pair.exchange(m, k, kBytes);
        if (pair.receiver()) {
            pair.recv_stream->synchronize();
            EXPECT_EQ(pair.wrong_in_slot(k, m, kBytes), 0u) << "message " << m;
            pair.transport->release(k, *pair.recv_stream);
        }
    }
    pair.send_stream->synchronize();
    pair.recv_stream->synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
}

// A slot's second message is copied only once the consumer has released its first: until then
// the slot still holds the first. Without the wait (debug_skip_reuse_wait) it is overwritten,
// which is what the pipeline's failing test relies on.
void second_message_into_one_slot(bool skip_reuse_wait) {
    constexpr std::size_t kBytes = 4096;
    IpcPair pair(kBytes, 1, skip_reuse_wait);
    pair.exchange(0, 0, kBytes);
    if (pair.receiver()) pair.recv_stream->synchronize();
    MPI_Barrier(MPI_COMM_WORLD);                 // message 0 is in the slot
    if (pair.sender()) pair.send(1, 0, kBytes);  // held until slot 0 is released
    // Without the wait the copy is done once the send stream is; with it, the stream is held,
    // and a copy that wrongly went ahead would be there after a while.
    if (skip_reuse_wait && pair.sender()) pair.send_stream->synchronize();
    if (!skip_reuse_wait) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Barrier(MPI_COMM_WORLD);
    if (pair.receiver()) {
        const std::size_t still_first = pair.wrong_in_slot(0, 0, kBytes);
        if (skip_reuse_wait) {
            EXPECT_NE(still_first, 0u) << "without the wait the second copy overwrites the slot";
        } else {
            EXPECT_EQ(still_first, 0u) << "the second copy did not wait for the release";
        }
        pair.transport->release(0, *pair.recv_stream);
        pair.transport->await(0, *pair.recv_stream);
        pair.recv_stream->synchronize();
        EXPECT_EQ(pair.wrong_in_slot(0, 1, kBytes), 0u) << "the second message after the release";
    }
    pair.send_stream->synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CpuIpc, ASlotIsWrittenAgainOnlyAfterItsRelease) { second_message_into_one_slot(false); }

TEST(CpuIpc, WithoutTheReuseWaitTheSlotIsOverwritten) { second_message_into_one_slot(true); }

}  // namespace
}  // namespace gpurelay
