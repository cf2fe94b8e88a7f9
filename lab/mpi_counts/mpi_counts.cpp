// A count of the collective MPI calls each rank takes part in, through MPI's profiling interface
// (preloaded: mpi_counts.py's mpirun_flags). A call counts as over the world when its
// communicator (a file's or window's group) holds every rank: such a duplicate waits for the
// slowest as the world does. At MPI_Finalize each rank writes DIR/rank-R.json: the calls by name
// over the world and over fewer ranks, their totals, the bytes gathers received, the seconds
// inside MPI_Init and each call, and from MPI_Init's return to each call's first. Without
// GPURELAY_MPI_COUNTS it counts and writes nothing.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <type_traits>

namespace {

using Clock = std::chrono::steady_clock;

struct Tally {
    std::mutex mutex;  // under MPI_THREAD_MULTIPLE the program's threads call MPI at once
    std::map<std::string, std::uint64_t> world, fewer;
    std::uint64_t gathered_bytes = 0;
    // Seconds inside each call (every communicator), and from MPI_Init's return to its first.
    std::map<std::string, double> seconds, first;
    Clock::time_point initialized = Clock::now();
    double init_seconds = 0;
};

Tally& tally() {
    static Tally* const counts = new Tally;  // never destroyed: threads may count until exit
    return *counts;
}

bool counting() {
    static const bool on = std::getenv("GPURELAY_MPI_COUNTS") != nullptr;
    return on;
}

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// How many ranks a call spans: a count, a communicator's, a file's or window's group's (made
// here, and freed), or a handle's being freed (0 for none).
int ranks_of(int ranks) { return ranks; }

int ranks_of(MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) return 0;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return size;
}

template <typename Handle>
int group_size(int (*get_group)(Handle, MPI_Group*), Handle handle) {
    MPI_Group group = MPI_GROUP_NULL;
    get_group(handle, &group);
    int size = 0;
    PMPI_Group_size(group, &size);
    PMPI_Group_free(&group);
    return size;
}

int ranks_of(MPI_File file) { return group_size(PMPI_File_get_group, file); }
int ranks_of(MPI_Win window) { return group_size(PMPI_Win_get_group, window); }

template <typename Handle>
int ranks_of(Handle* handle) {
    return handle != nullptr ? ranks_of(*handle) : 0;
}

// One collective call: counted as it starts (over the ranks of `over`), timed until it returns.
class Call {
  public:
    template <typename Over>
    Call(const char* name, Over over) : name_(counting() ? name : nullptr) {
        if (name_ == nullptr) return;
        const int ranks = ranks_of(over);
        int world = 0;
        PMPI_Comm_size(MPI_COMM_WORLD, &world);
        Tally& t = tally();
        const std::lock_guard lock(t.mutex);
        ++(ranks == world ? t.world : t.fewer)[name_];
        t.first.emplace(name_, std::chrono::duration<double>(start_ - t.initialized).count());
    }
    ~Call() {
        if (name_ == nullptr) return;
        Tally& t = tally();
        const std::lock_guard lock(t.mutex);
        t.seconds[name_] += since(start_);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

  private:
    const char* name_;
    Clock::time_point start_ = Clock::now();
};

// Bytes this rank receives (`receives`: a gather's root, any all-gather rank): `per_rank`
// elements from each rank of `comm` (its `counts`, for the v forms).
void add_gathered(bool receives, MPI_Comm comm, const int* counts, int per_rank,
                  MPI_Datatype type) {
    if (!counting() || !receives) return;
    const int ranks = ranks_of(comm);
    std::uint64_t elements = 0;
    for (int r = 0; r < ranks; ++r)
        elements += static_cast<std::uint64_t>(counts ? counts[r] : per_rank);
    int type_bytes = 0;
    PMPI_Type_size(type, &type_bytes);
    Tally& t = tally();
    const std::lock_guard lock(t.mutex);
    t.gathered_bytes += elements * static_cast<std::uint64_t>(type_bytes);
}

bool is_root(int root, MPI_Comm comm) {
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    return rank == root;
}

// MPI_Init's own time (at scale, most of set-up); first call times count from its return.
template <typename Init>
int timed_init(Init init) {
    const Clock::time_point start = Clock::now();
    const int status = init();
    tally().init_seconds = since(start);
    tally().initialized = Clock::now();
    return status;
}

// `key` (with what comes before it), then the object of `values`.
template <typename Number>
void write_object(std::FILE* out, const char* key, const std::map<std::string, Number>& values) {
    std::fprintf(out, "%s{", key);
    const char* separator = "";
    for (const auto& [name, value] : values) {
        if constexpr (std::is_same_v<Number, double>) {
            std::fprintf(out, "%s\"%s\": %.9g", separator, name.c_str(), value);
        } else {
            std::fprintf(out, "%s\"%s\": %llu", separator, name.c_str(),
                         static_cast<unsigned long long>(value));
        }
        separator = ", ";
    }
    std::fputc('}', out);
}

unsigned long long total(const std::map<std::string, std::uint64_t>& calls) {
    return std::accumulate(calls.begin(), calls.end(), 0ull,
                           [](auto sum, const auto& call) { return sum + call.second; });
}

// DIR/rank-R.json, written through a temporary name so that a reader never sees half of it.
void write_counts() {
    const char* dir = std::getenv("GPURELAY_MPI_COUNTS");
    if (dir == nullptr) return;
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string path = std::string(dir) + "/rank-" + std::to_string(rank) + ".json";
    std::FILE* out = std::fopen((path + ".tmp").c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "mpi_counts: cannot write %s.tmp\n", path.c_str());
        return;
    }
    Tally& t = tally();
    const std::lock_guard lock(t.mutex);
    std::fprintf(out, "{\"rank\": %d, \"world_size\": %d, \"world_calls\": %llu, ", rank, size,
                 total(t.world));
    std::fprintf(out, "\"fewer_calls\": %llu, \"gathered_bytes\": %llu", total(t.fewer),
                 static_cast<unsigned long long>(t.gathered_bytes));
    write_object(out, ",\n \"world\": ", t.world);
    write_object(out, ",\n \"fewer\": ", t.fewer);
    std::fprintf(out, ",\n \"init_seconds\": %.9g", t.init_seconds);
    write_object(out, ", \"seconds\": ", t.seconds);
    write_object(out, ",\n \"first_seconds\": ", t.first);
    std::fputs("}\n", out);
    std::fclose(out);
    std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace

// One wrapper per collective call: counted over the ranks of `over` and timed, then PMPI's.
#define COUNTED(name, over, params, args) \
    int name params {                     \
        const Call call(#name, over);     \
        return P##name args;              \
    }
// A gather's wrapper also adds the bytes this rank receives (on the ranks where `receives`).
#define GATHERED(name, receives, counts, per_rank, params, args)   \
    int name params {                                              \
        const Call call(#name, comm);                              \
        add_gathered(receives, comm, counts, per_rank, recv_type); \
        return P##name args;                                       \
    }
// The parameters that families of calls share, and the arguments passing them on: a reduction's;
// a gather's, scatter's or all-to-all's two sides (v forms apart); an MPI-IO call's; an
// allocation's.
#define REDUCE(...) (const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, __VA_ARGS__)
#define REDUCE_ARGS(...) (send, recv, n, type, op, __VA_ARGS__)
#define SIDES(...)                                                                 \
    (const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n, \
     MPI_Datatype recv_type, __VA_ARGS__)
#define SIDES_ARGS(...) (send, send_n, send_type, recv, recv_n, recv_type, __VA_ARGS__)
#define IO(...) (MPI_File file, __VA_ARGS__, int n, MPI_Datatype type, MPI_Status* status)
#define IO_ARGS(...) (file, __VA_ARGS__, n, type, status)
#define ALLOCATE \
    (MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void* base, MPI_Win* window)
#define ALLOCATE_ARGS (size, unit, info, comm, base, window)

// --- Blocking collectives
COUNTED(MPI_Barrier, comm, (MPI_Comm comm), (comm))
COUNTED(MPI_Bcast, comm, (void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm),
        (buffer, n, type, root, comm))
COUNTED(MPI_Reduce, comm, REDUCE(int root, MPI_Comm comm), REDUCE_ARGS(root, comm))
COUNTED(MPI_Allreduce, comm, REDUCE(MPI_Comm comm), REDUCE_ARGS(comm))
COUNTED(MPI_Scan, comm, REDUCE(MPI_Comm comm), REDUCE_ARGS(comm))
COUNTED(MPI_Exscan, comm, REDUCE(MPI_Comm comm), REDUCE_ARGS(comm))
GATHERED(MPI_Gather, is_root(root, comm), nullptr, recv_n, SIDES(int root, MPI_Comm comm),
         SIDES_ARGS(root, comm))
GATHERED(MPI_Gatherv, is_root(root, comm), recv_n, 0,
         (const void* send, int send_n, MPI_Datatype send_type, void* recv, const int recv_n[],
          const int displs[], MPI_Datatype recv_type, int root, MPI_Comm comm),
         (send, send_n, send_type, recv, recv_n, displs, recv_type, root, comm))
GATHERED(MPI_Allgather, true, nullptr, recv_n, SIDES(MPI_Comm comm), SIDES_ARGS(comm))
GATHERED(MPI_Allgatherv, true, recv_n, 0,
         (const void* send, int send_n, MPI_Datatype send_type, void* recv, const int recv_n[],
          const int displs[], MPI_Datatype recv_type, MPI_Comm comm),
         (send, send_n, send_type, recv, recv_n, displs, recv_type, comm))
COUNTED(MPI_Scatter, comm, SIDES(int root, MPI_Comm comm), SIDES_ARGS(root, comm))
COUNTED(MPI_Scatterv, comm,
        (const void* send, const int send_n[], const int displs[], MPI_Datatype send_type,
         void* recv, int recv_n, MPI_Datatype recv_type, int root, MPI_Comm comm),
        (send, send_n, displs, send_type, recv, recv_n, recv_type, root, comm))
COUNTED(MPI_Alltoall, comm, SIDES(MPI_Comm comm), SIDES_ARGS(comm))
COUNTED(MPI_Alltoallv, comm,
        (const void* send, const int send_n[], const int send_displs[], MPI_Datatype send_type,
         void* recv, const int recv_n[], const int recv_displs[], MPI_Datatype recv_type,
         MPI_Comm comm),
        (send, send_n, send_displs, send_type, recv, recv_n, recv_displs, recv_type, comm))
COUNTED(MPI_Reduce_scatter, comm,
        (const void* send, void* recv, const int recv_n[], MPI_Datatype type, MPI_Op op,
         MPI_Comm comm),
        (send, recv, recv_n, type, op, comm))
COUNTED(MPI_Reduce_scatter_block, comm, REDUCE(MPI_Comm comm), REDUCE_ARGS(comm))

// --- Non-blocking collectives: counted when posted
COUNTED(MPI_Ibarrier, comm, (MPI_Comm comm, MPI_Request* request), (comm, request))
COUNTED(MPI_Ibcast, comm,
        (void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request),
        (buffer, n, type, root, comm, request))
COUNTED(MPI_Ireduce, comm, REDUCE(int root, MPI_Comm comm, MPI_Request* request),
        REDUCE_ARGS(root, comm, request))
COUNTED(MPI_Iallreduce, comm, REDUCE(MPI_Comm comm, MPI_Request* request),
        REDUCE_ARGS(comm, request))
GATHERED(MPI_Igather, is_root(root, comm), nullptr, recv_n,
         SIDES(int root, MPI_Comm comm, MPI_Request* request), SIDES_ARGS(root, comm, request))
GATHERED(MPI_Iallgather, true, nullptr, recv_n, SIDES(MPI_Comm comm, MPI_Request* request),
         SIDES_ARGS(comm, request))
COUNTED(MPI_Ialltoall, comm, SIDES(MPI_Comm comm, MPI_Request* request), SIDES_ARGS(comm, request))

// --- Communicators and windows: collective over the communicator they are made from
COUNTED(MPI_Comm_split, comm, (MPI_Comm comm, int color, int key, MPI_Comm* out),
        (comm, color, key, out))
COUNTED(MPI_Comm_split_type, comm, (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out),
        (comm, type, key, info, out))
COUNTED(MPI_Comm_dup, comm, (MPI_Comm comm, MPI_Comm* out), (comm, out))
COUNTED(MPI_Comm_create, comm, (MPI_Comm comm, MPI_Group group, MPI_Comm* out), (comm, group, out))
// Collective over the group's ranks only (the caller's group: not freed here).
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* out) {
    int ranks = 0;
    PMPI_Group_size(group, &ranks);
    const Call call("MPI_Comm_create_group", ranks);
    return PMPI_Comm_create_group(comm, group, tag, out);
}
COUNTED(MPI_Comm_free, comm, (MPI_Comm * comm), (comm))
COUNTED(MPI_Win_create, comm,
        (void* base, MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, MPI_Win* window),
        (base, size, unit, info, comm, window))
COUNTED(MPI_Win_allocate, comm, ALLOCATE, ALLOCATE_ARGS)
COUNTED(MPI_Win_allocate_shared, comm, ALLOCATE, ALLOCATE_ARGS)
COUNTED(MPI_Win_fence, window, (int assertion, MPI_Win window), (assertion, window))
COUNTED(MPI_Win_free, window, (MPI_Win * window), (window))

// --- MPI-IO's collective calls, over the file's communicator (HDF5 makes them through MPI-IO)
COUNTED(MPI_File_open, comm,
        (MPI_Comm comm, const char* name, int mode, MPI_Info info, MPI_File* file),
        (comm, name, mode, info, file))
COUNTED(MPI_File_close, file, (MPI_File * file), (file))
COUNTED(MPI_File_sync, file, (MPI_File file), (file))
COUNTED(MPI_File_set_size, file, (MPI_File file, MPI_Offset size), (file, size))
COUNTED(MPI_File_preallocate, file, (MPI_File file, MPI_Offset size), (file, size))
COUNTED(MPI_File_set_view, file,
        (MPI_File file, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
         const char* representation, MPI_Info info),
        (file, disp, etype, filetype, representation, info))
COUNTED(MPI_File_set_atomicity, file, (MPI_File file, int flag), (file, flag))
COUNTED(MPI_File_write_all, file, IO(const void* buffer), IO_ARGS(buffer))
COUNTED(MPI_File_write_at_all, file, IO(MPI_Offset offset, const void* buffer),
        IO_ARGS(offset, buffer))
COUNTED(MPI_File_read_all, file, IO(void* buffer), IO_ARGS(buffer))
COUNTED(MPI_File_read_at_all, file, IO(MPI_Offset offset, void* buffer), IO_ARGS(offset, buffer))

int MPI_Init(int* argc, char*** argv) {
    return timed_init([&] { return PMPI_Init(argc, argv); });
}
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
    return timed_init([&] { return PMPI_Init_thread(argc, argv, required, provided); });
}

int MPI_Finalize() {
    write_counts();
    return PMPI_Finalize();
}
