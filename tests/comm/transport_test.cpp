// The CPU path's transports through Transport::exchange, under mpirun: -np 2 sends from rank 0
// to rank 1, -np 1 sends a rank to itself (both sides in one exchange, on two streams). Each
// message is a pattern the receiver checks byte for byte, into a buffer poisoned first.
#include "comm/transport.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
    std::function<std::unique_ptr<Transport>(Device&, const TransportOptions&)> make;
};

// Sends `messages` messages of case `c` one after another on the same streams and buffers, as
// the pipeline's slots are reused: each must arrive whole and in order.
void exchange_messages(const Case& c, int messages) {
    const int rank = world(MPI_Comm_rank);
    const int size = world(MPI_Comm_size);
    const bool sender = rank == 0;
    const bool receiver = size == 1 || rank == 1;
    const int peer = size == 1 ? 0 : 1 - rank;
    auto device = make_host_device(kTimeout);
    const TransportOptions options{c.bytes, c.chunk, kTimeout};
    auto transport = c.make(*device, options);
    auto send_stream = device->make_stream(false, "send");
    auto recv_stream = device->make_stream(true, "recv");
    Buffer out = device->allocate(c.bytes + 1);
    Buffer in = device->allocate(c.bytes + 1);
    auto* out_bytes = static_cast<std::uint8_t*>(out.data());
    auto* in_bytes = static_cast<std::uint8_t*>(in.data());
    for (int m = 0; m < messages; ++m) {
        if (sender) {
            for (std::size_t i = 0; i < c.bytes; ++i) out_bytes[i] = pattern(i, m);
        }
        std::memset(in_bytes, 0xee, c.bytes + 1);  // one byte past the message stays untouched
        const SendSide send{out.data(), c.bytes, peer, *send_stream, static_cast<std::size_t>(m)};
        const RecvSide recv{in.data(), c.bytes, peer, *recv_stream, static_cast<std::size_t>(m)};
        transport->exchange(sender ? &send : nullptr, receiver ? &recv : nullptr);
        send_stream->synchronize();
        recv_stream->synchronize();
        if (receiver) {
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < c.bytes; ++i) wrong += in_bytes[i] != pattern(i, m);
            EXPECT_EQ(wrong, 0u) << c.name << ": message " << m << " of " << c.bytes << " bytes";
            EXPECT_EQ(in_bytes[c.bytes], 0xee) << c.name << ": wrote past the message";
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

std::vector<Case> cases() {
    auto host = [](Device&, const TransportOptions& o) {
        return make_mpi_host_transport(MPI_COMM_WORLD, o);
    };
    auto staged = [](Device& d, const TransportOptions& o) {
        return make_mpi_staged_transport(MPI_COMM_WORLD, d, o);
    };
    return {
        {"host, one piece", 10007, 1 << 20, host},
        {"host, pieces with a tail", 10007, 4096, host},
        {"staged, one piece", 10007, 1 << 20, staged},
        {"staged, pieces with a tail", 100003, 4096, staged},
        {"staged, pieces of one byte", 37, 1, staged},
    };
}

TEST(CpuTransports, MessagesArriveWholeAndInOrder) {
    for (const Case& c : cases()) exchange_messages(c, 4);
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
    const TransportOptions options{64, 64, kTimeout};
    EXPECT_EQ(make_mpi_host_transport(MPI_COMM_WORLD, options)->name(), "mpi (host memory)");
    EXPECT_EQ(make_mpi_staged_transport(MPI_COMM_WORLD, *device, options)->name(),
              "mpi (host-staged)");
}

}  // namespace
}  // namespace gpurelay
