// Session 6's probe: where the ipc transport's per-message cost goes when two processes share one
// GPU. A stand-alone program (not part of the build): it forks a producer and a consumer, which
// exchange CUDA IPC handles over a socket pair and then run the same sequence of variants, each
// a batch of messages queued back to back, as bench_transport's transport/ipc_gpu does:
//   d2d            producer copies into its own buffer (the ceiling)
//   mapped         producer copies into the consumer's slot, no words (bench's copy-only)
//   d2d_local_N    producer copies into N targets of its own in turn (no words)
//   self_*         producer alone, with stream memory operations on its own words that are
//                  already satisfied: what the memory operations cost beside the copy
//   ipc_S          the transport's protocol with S slots (released/arrived words)
//   ipc_2_solo     the protocol's producer side, with every release already given
//   ipc_2_nowait   the producer never waits for a release; the consumer still waits and releases
//   ipc_2_batched  the consumer's wait and release as one cuStreamBatchMemOp
//   ipc_2_host     the words in shared pinned host memory instead of device memory
//   ipc_2_aligned  the slots at 2 MiB boundaries (the others start 4 KiB into the block)
//   ipc_N_vmm      the slots in memory made with cuMemCreate and passed as a file descriptor,
//                  mapped by the producer with cuMemMap (instead of cudaIpcOpenMemHandle)
//   pull_2         the consumer copies from the producer's buffer (the other direction)
//   pingpong       one word each way: the round trip between the two processes' streams
// Build: nvcc -O2 -std=c++17 -arch=sm_90 ipc_probe.cu -lcuda -o ipc_probe
// Run:   ./ipc_probe BYTES [REPS]
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x)                                                                             \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%d: %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); \
            _exit(1);                                                                     \
        }                                                                                 \
    } while (0)
#define DK(x)                                                               \
    do {                                                                    \
        CUresult r_ = (x);                                                  \
        if (r_ != CUDA_SUCCESS) {                                           \
            std::fprintf(stderr, "%d: %s: %d\n", __LINE__, #x, int(r_)); \
            _exit(1);                                                       \
        }                                                                   \
    } while (0)

namespace {

constexpr int kBatch = 64;
constexpr int kMaxSlots = 8;
constexpr std::size_t kWordsBytes = 4096;
constexpr std::size_t kAlignedAt = std::size_t{2} << 20;  // ipc_2_aligned's slots start here
constexpr int kLocalTargets = 4;  // the producer's own targets, for d2d_local_N
constexpr int kVmmSlots = 4;      // ipc_N_vmm's slots
// Word offsets (uint32) in each side's word block.
constexpr int kArrived = 0, kPing = 16, kProduced = 32;     // the consumer's block
constexpr int kReleased = 0, kPong = 16, kConsumed = 32, kSelf = 48;  // the producer's block

int sock = -1;
void send_all(const void* p, std::size_t n) {
    if (write(sock, p, n) != static_cast<ssize_t>(n)) _exit(2);
}
void recv_all(void* p, std::size_t n) {
    auto* c = static_cast<char*>(p);
    while (n > 0) {
        ssize_t got = read(sock, c, n);
        if (got <= 0) {
            std::fprintf(stderr, "the peer is gone\n");
            _exit(2);
        }
        c += got;
        n -= static_cast<std::size_t>(got);
    }
}
void barrier() {
    char c = 0;
    send_all(&c, 1);
    recv_all(&c, 1);
}
// A file descriptor to the peer, over the socket pair (SCM_RIGHTS), and back.
void send_fd(int fd) {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(sock, &msg, 0) != 1) _exit(2);
}
int recv_fd() {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(sock, &msg, 0) != 1) _exit(2);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr || c->cmsg_type != SCM_RIGHTS) _exit(2);
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

// `bytes` of the consumer's device memory made with cuMemCreate, mapped in both processes (the
// consumer exports it as a file descriptor); prints the granularity once.
char* vmm_map(bool producer, std::size_t bytes) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    std::size_t granularity = 0, minimum = 0;
    DK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    DK(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const std::size_t size = (bytes + granularity - 1) / granularity * granularity;
    CUmemGenericAllocationHandle handle{};
    if (!producer) {
        DK(cuMemCreate(&handle, size, &prop, 0));
        int fd = -1;
        DK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        send_fd(fd);
        close(fd);
    } else {
        const int fd = recv_fd();
        DK(cuMemImportFromShareableHandle(&handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        close(fd);
        std::printf("vmm: granularity %zu recommended, %zu minimum; %zu bytes\n", granularity,
                    minimum, size);
    }
    CUdeviceptr p = 0;
    DK(cuMemAddressReserve(&p, size, granularity, 0, 0));
    DK(cuMemMap(p, size, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DK(cuMemSetAccess(p, size, &access, 1));
    return reinterpret_cast<char*>(p);
}

double max_over_both(double v) {
    double other = 0;
    send_all(&v, sizeof v);
    recv_all(&other, sizeof other);
    return std::max(v, other);
}

struct Side {
    bool producer = false;
    std::size_t bytes = 0;
    cudaStream_t stream{};
    std::uint32_t* mine = nullptr;    // my word block (device)
    std::uint32_t* theirs = nullptr;  // the peer's word block (mapped)
    std::uint32_t* host = nullptr;    // shared pinned host words (device address)
    std::uint32_t* host_cpu = nullptr;
    char* slots = nullptr;  // the consumer's slots (as this process maps them)
    char* aligned = nullptr;  // the same number of slots, from 2 MiB into the block (ipc_2_aligned)
    char* vmm = nullptr;      // kVmmSlots slots made with cuMemCreate (ipc_N_vmm)
    char* src = nullptr;    // the producer's source (as this process maps it)
    char* dst = nullptr;    // the producer's own target (d2d)
    std::uint32_t* consumer_words() const { return producer ? theirs : mine; }
    std::uint32_t* producer_words() const { return producer ? mine : theirs; }
    char* slot(int k) const { return slots + static_cast<std::size_t>(k) * bytes; }
    char* aligned_slot(int k) const { return aligned + static_cast<std::size_t>(k) * bytes; }
    char* vmm_slot(int k) const { return vmm + static_cast<std::size_t>(k) * bytes; }
};

CUstream cu(const Side& s) { return reinterpret_cast<CUstream>(s.stream); }
CUdeviceptr at(std::uint32_t* base, int i) { return reinterpret_cast<CUdeviceptr>(base + i); }
void wait_geq(const Side& s, std::uint32_t* base, int i, std::uint32_t v) {
    DK(cuStreamWaitValue32(cu(s), at(base, i), v, CU_STREAM_WAIT_VALUE_GEQ));
}
void write_word(const Side& s, std::uint32_t* base, int i, std::uint32_t v,
                unsigned flags = CU_STREAM_WRITE_VALUE_DEFAULT) {
    DK(cuStreamWriteValue32(cu(s), at(base, i), v, flags));
}
void copy(const Side& s, void* dst, const void* src) {
    CK(cudaMemcpyAsync(dst, src, s.bytes, cudaMemcpyDeviceToDevice, s.stream));
}

// One variant: queues message i (0-based) on this side, with per-variant state in `n`
// (uses of each slot so far, counted alike on both sides).
using Queue = std::function<void(const Side&, int i, std::vector<std::uint32_t>& n)>;

struct Variant {
    std::string name;
    Queue queue;
    // Run before each batch on each side, after the words are zeroed (on the side's stream).
    std::function<void(const Side&)> prepare = [](const Side&) {};
};

enum class SlotsAt { block, aligned, vmm };

// The transport's protocol, S slots, on the words at `cw` (arrived) and `pw` (released).
Variant protocol(const std::string& name, int slots, bool host_words, bool producer_waits,
                 unsigned release_flags, SlotsAt at = SlotsAt::block) {
    Variant v;
    v.name = name;
    v.queue = [=](const Side& s, int i, std::vector<std::uint32_t>& n) {
        const int k = i % slots;
        std::uint32_t* cw = host_words ? s.host : s.consumer_words();
        std::uint32_t* pw = host_words ? s.host + 16 : s.producer_words();
        const std::uint32_t use = ++n[k];
        if (s.producer) {
            if (producer_waits) wait_geq(s, pw, kReleased + k, use - 1);
            copy(s,
                 at == SlotsAt::aligned ? s.aligned_slot(k)
                 : at == SlotsAt::vmm   ? s.vmm_slot(k)
                                        : s.slot(k),
                 s.src);
            write_word(s, cw, kArrived + k, use);
        } else {
            wait_geq(s, cw, kArrived + k, use);
            write_word(s, pw, kReleased + k, use, release_flags);
        }
    };
    return v;
}

std::vector<Variant> variants() {
    std::vector<Variant> all;
    all.push_back({"d2d", [](const Side& s, int, std::vector<std::uint32_t>&) {
                       if (s.producer) copy(s, s.dst, s.src);
                   }});
    for (int targets : {2, 4}) {
        all.push_back({"d2d_local_" + std::to_string(targets),
                       [targets](const Side& s, int i, std::vector<std::uint32_t>&) {
                           if (s.producer) copy(s, s.dst + (i % targets) * s.bytes, s.src);
                       }});
    }
    all.push_back({"mapped", [](const Side& s, int, std::vector<std::uint32_t>&) {
                       if (s.producer) copy(s, s.slot(0), s.src);
                   }});
    all.push_back({"self_wait_copy", [](const Side& s, int, std::vector<std::uint32_t>&) {
                       if (!s.producer) return;
                       wait_geq(s, s.mine, kSelf, 0);
                       copy(s, s.dst, s.src);
                   }});
    all.push_back({"self_copy_write", [](const Side& s, int i, std::vector<std::uint32_t>&) {
                       if (!s.producer) return;
                       copy(s, s.dst, s.src);
                       write_word(s, s.mine, kSelf + 1, i + 1);
                   }});
    all.push_back({"self_wait_copy_write", [](const Side& s, int i, std::vector<std::uint32_t>&) {
                       if (!s.producer) return;
                       wait_geq(s, s.mine, kSelf, 0);
                       copy(s, s.dst, s.src);
                       write_word(s, s.mine, kSelf + 1, i + 1);
                   }});
    all.push_back({"self_wait_copy_write_mapped",
                   [](const Side& s, int i, std::vector<std::uint32_t>&) {
                       if (!s.producer) return;
                       wait_geq(s, s.mine, kSelf, 0);
                       copy(s, s.slot(i % 2), s.src);
                       write_word(s, s.theirs, kArrived + 8 + i % 2, i + 1);
                   }});
    for (int slots : {1, 2, 4, 8}) {
        all.push_back(protocol("ipc_" + std::to_string(slots), slots, false, true,
                               CU_STREAM_WRITE_VALUE_DEFAULT));
    }
    {
        Variant solo = protocol("ipc_2_solo", 2, false, true, CU_STREAM_WRITE_VALUE_DEFAULT);
        auto base = solo.queue;
        solo.queue = [base](const Side& s, int i, std::vector<std::uint32_t>& n) {
            if (s.producer) base(s, i, n);
            else ++n[i % 2];
        };
        // Every release given up front: the producer's waits are all satisfied.
        solo.prepare = [](const Side& s) {
            if (s.producer) return;
            for (int k = 0; k < 2; ++k) write_word(s, s.theirs, kReleased + k, 1u << 20);
        };
        all.push_back(solo);
    }
    all.push_back(protocol("ipc_2_nowait", 2, false, false, CU_STREAM_WRITE_VALUE_DEFAULT));
    {
        // The consumer's wait and release as one batch of memory operations.
        Variant batched = protocol("ipc_2_batched", 2, false, true, CU_STREAM_WRITE_VALUE_DEFAULT);
        auto base = batched.queue;
        batched.queue = [base](const Side& s, int i, std::vector<std::uint32_t>& n) {
            if (s.producer) return base(s, i, n);
            const int k = i % 2;
            const std::uint32_t use = ++n[k];
            CUstreamBatchMemOpParams ops[2]{};
            ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
            ops[0].waitValue.address = at(s.mine, kArrived + k);
            ops[0].waitValue.value = use;
            ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
            ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
            ops[1].writeValue.address = at(s.theirs, kReleased + k);
            ops[1].writeValue.value = use;
            ops[1].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
            DK(cuStreamBatchMemOp(cu(s), 2, ops, 0));
        };
        all.push_back(batched);
    }
    all.push_back(protocol("ipc_2_host", 2, true, true, CU_STREAM_WRITE_VALUE_DEFAULT));
    all.push_back(protocol("ipc_2_aligned", 2, false, true, CU_STREAM_WRITE_VALUE_DEFAULT,
                           SlotsAt::aligned));
    for (int slots : {2, 4}) {
        all.push_back(protocol("ipc_" + std::to_string(slots) + "_vmm", slots, false, true,
                               CU_STREAM_WRITE_VALUE_DEFAULT, SlotsAt::vmm));
    }
    all.push_back({"pull_2", [](const Side& s, int i, std::vector<std::uint32_t>& n) {
                       const int k = i % 2;
                       const std::uint32_t use = ++n[k];
                       if (s.producer) {
                           wait_geq(s, s.mine, kConsumed + k, use - 1);
                           write_word(s, s.theirs, kProduced + k, use);
                       } else {
                           wait_geq(s, s.mine, kProduced + k, use);
                           copy(s, s.slot(k), s.src);
                           write_word(s, s.theirs, kConsumed + k, use);
                       }
                   }});
    all.push_back({"pingpong", [](const Side& s, int i, std::vector<std::uint32_t>&) {
                       const auto use = static_cast<std::uint32_t>(i + 1);
                       if (s.producer) {
                           write_word(s, s.theirs, kPing, use);
                           wait_geq(s, s.mine, kPong, use);
                       } else {
                           wait_geq(s, s.mine, kPing, use);
                           write_word(s, s.theirs, kPong, use);
                       }
                   }});
    return all;
}

struct Timing {
    double wall_us, gpu_us;  // per message
};

Timing run_batch(const Side& s, const Variant& v, cudaEvent_t start, cudaEvent_t stop) {
    CK(cudaMemsetAsync(s.mine, 0, kWordsBytes, s.stream));
    if (s.producer) std::memset(s.host_cpu, 0, kWordsBytes);
    CK(cudaStreamSynchronize(s.stream));
    barrier();
    v.prepare(s);
    CK(cudaStreamSynchronize(s.stream));
    barrier();
    std::vector<std::uint32_t> n(kMaxSlots, 0);
    const auto begin = std::chrono::steady_clock::now();
    CK(cudaEventRecord(start, s.stream));
    for (int i = 0; i < kBatch; ++i) v.queue(s, i, n);
    CK(cudaEventRecord(stop, s.stream));
    CK(cudaStreamSynchronize(s.stream));
    const double wall =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count();
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    return {max_over_both(wall) / kBatch, max_over_both(ms * 1e3) / kBatch};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int side_main(bool producer, std::size_t bytes, int reps, char* host_block) {
    alarm(50);  // a stuck wait ends this side, and the peer then reads end of file
    Side s;
    s.producer = producer;
    s.bytes = bytes;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    // Mine: words, then the slots (consumer) or the source and the d2d target (producer).
    // The producer's: the source, then kLocalTargets targets of its own (d2d, d2d_local_N).
    const std::size_t body = producer ? (1 + kLocalTargets) * bytes : kMaxSlots * bytes + kAlignedAt;
    char* block = nullptr;
    CK(cudaMalloc(&block, kWordsBytes + body));
    CK(cudaMemset(block, 0, kWordsBytes + body));
    CK(cudaDeviceSynchronize());
    s.mine = reinterpret_cast<std::uint32_t*>(block);
    cudaIpcMemHandle_t out{}, in{};
    CK(cudaIpcGetMemHandle(&out, block));
    send_all(&out, sizeof out);
    recv_all(&in, sizeof in);
    char* peer = nullptr;
    CK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&peer), in, cudaIpcMemLazyEnablePeerAccess));
    s.theirs = reinterpret_cast<std::uint32_t*>(peer);
    char* consumer_block = producer ? peer : block;
    char* producer_block = producer ? block : peer;
    s.slots = consumer_block + kWordsBytes;
    s.aligned = consumer_block + kAlignedAt;
    s.vmm = vmm_map(producer, kVmmSlots * bytes);
    s.src = producer_block + kWordsBytes;
    s.dst = producer_block + kWordsBytes + bytes;
    CK(cudaHostRegister(host_block, kWordsBytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    s.host_cpu = reinterpret_cast<std::uint32_t*>(host_block);
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.host), host_block, 0));
    cudaEvent_t start{}, stop{};
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    if (producer) {
        std::printf("bytes %zu, batch %d, %d batches per variant (medians; us per message)\n",
                    bytes, kBatch, reps);
        std::printf("%-30s %10s %10s %10s %10s\n", "variant", "wall_us", "gpu_us", "GB/s", "of d2d");
    }
    double d2d = 0;
    for (const Variant& v : variants()) {
        run_batch(s, v, start, stop);  // warm-up
        std::vector<double> wall, gpu;
        for (int r = 0; r < reps; ++r) {
            const Timing t = run_batch(s, v, start, stop);
            wall.push_back(t.wall_us);
            gpu.push_back(t.gpu_us);
        }
        const double w = median(wall), g = median(gpu);
        if (v.name == "d2d") d2d = w;
        if (producer) {
            std::printf("%-30s %10.2f %10.2f %10.1f %10.3f\n", v.name.c_str(), w, g,
                        bytes / (w * 1e3), d2d / w);
            std::fflush(stdout);
        }
    }
    barrier();
    CK(cudaIpcCloseMemHandle(peer));
    barrier();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s BYTES [REPS]\n", argv[0]);
        return 2;
    }
    const std::size_t bytes = std::strtoull(argv[1], nullptr, 0);
    const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
    // Shared before the fork: the host words both processes register.
    void* host_block = mmap(nullptr, kWordsBytes, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (host_block == MAP_FAILED) return 1;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
    const pid_t child = fork();
    if (child == 0) {
        close(pair[0]);
        sock = pair[1];
        _exit(side_main(false, bytes, reps, static_cast<char*>(host_block)));
    }
    close(pair[1]);
    sock = pair[0];
    const int rc = side_main(true, bytes, reps, static_cast<char*>(host_block));
    int status = 0;
    waitpid(child, &status, 0);
    return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
