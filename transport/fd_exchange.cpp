// exchange_fd: the lower rank of the pair listens on a socket named after its process id and
// tells the other the name over MPI; the other connects, and each sends the other its descriptor.
#include "transport/fd_exchange.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "mpi/error.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr int kNameTag = 7302;
constexpr std::size_t kNameBytes = 64;

[[noreturn]] void fail(const std::string& what) {
    throw runtime_error("ipc: passing a memory handle to the peer: " + what + " (" +
                        std::strerror(errno) + ")");
}

class Socket {
  public:
    explicit Socket(int fd) : fd_(fd) {
        if (fd_ < 0) fail("socket()");
    }
    ~Socket() { close(fd_); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

// Calls `op` (bind or connect) on `fd` at the abstract address `name` (leading NUL: no file).
int with_address(int (*op)(int, const sockaddr*, socklen_t), int fd, const char* name) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::size_t n = std::min(std::strlen(name), sizeof address.sun_path - 2);
    std::memcpy(address.sun_path + 1, name, n);
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
    return op(fd, reinterpret_cast<const sockaddr*>(&address), length);
}

void await(int fd, short events, std::chrono::milliseconds timeout, const char* what) {
    pollfd p{fd, events, 0};
    int ready = 0;
    do {
        ready = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
        errno = ETIMEDOUT;
        fail(std::string(what) + " within timeout_s");
    }
    if (ready < 0) fail(what);
}

// One byte with room for one descriptor beside it: what each side sends and receives.
struct DescriptorMessage {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};

    DescriptorMessage() {
        message.msg_iov = &iov;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof control;
    }
    DescriptorMessage(const DescriptorMessage&) = delete;
    DescriptorMessage& operator=(const DescriptorMessage&) = delete;
};

void send_descriptor(int socket, int fd) {
    DescriptorMessage m;
    cmsghdr* header = CMSG_FIRSTHDR(&m.message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    if (sendmsg(socket, &m.message, MSG_NOSIGNAL) != 1) fail("sendmsg()");
}

int receive_descriptor(int socket, std::chrono::milliseconds timeout) {
    await(socket, POLLIN, timeout, "the peer's descriptor did not arrive");
    DescriptorMessage m;
    const ssize_t got = recvmsg(socket, &m.message, MSG_CMSG_CLOEXEC);
    if (got == 0) {
        errno = ECONNRESET;
        fail("the peer closed the socket");
    }
    if (got != 1) fail("recvmsg()");
    const cmsghdr* header = CMSG_FIRSTHDR(&m.message);
    if (header == nullptr || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
        errno = EPROTO;
        fail("no descriptor in the peer's message");
    }
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
    return fd;
}

}  // namespace

int exchange_fd(MPI_Comm comm, int peer, int mine, std::chrono::milliseconds timeout) {
    int me = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &me));
    const bool listens = me < peer;
    char name[kNameBytes] = {};
    // The listener is ready before the other learns the name.
    std::optional<Socket> listener;
    if (listens) {
        // Unique on this node for as long as this process lives.
        static int count = 0;
        std::snprintf(name, sizeof name, "gpurelay-fd-%ld-%d", static_cast<long>(getpid()),
                      count++);
        listener.emplace(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (with_address(::bind, listener->get(), name) != 0) fail("bind()");
        if (listen(listener->get(), 1) != 0) fail("listen()");
    }
    char peer_name[kNameBytes] = {};
    MPI_CHECK(MPI_Sendrecv(name, kNameBytes, MPI_CHAR, peer, kNameTag, peer_name, kNameBytes,
                           MPI_CHAR, peer, kNameTag, comm, MPI_STATUS_IGNORE));
    std::optional<Socket> connection;
    if (listens) {
        await(listener->get(), POLLIN, timeout, "the peer did not connect");
        const int fd = accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) fail("accept()");
        connection.emplace(fd);
    } else {
        connection.emplace(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        // fail() reads errno before the socket closes.
        if (with_address(::connect, connection->get(), peer_name) != 0) {
            fail(std::string("connect() to ") + peer_name);
        }
    }
    // Each sends first: one byte and a descriptor fit the socket's buffer, so neither blocks.
    send_descriptor(connection->get(), mine);
    return receive_descriptor(connection->get(), timeout);
}

}  // namespace gpurelay
