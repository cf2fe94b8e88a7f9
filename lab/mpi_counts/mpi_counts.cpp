// A count of the collective MPI calls each rank takes part in, through MPI's profiling interface:
// preloaded into a program under mpirun (mpirun -x LD_PRELOAD=libgpurelay_mpi_counts.so -x
// GPURELAY_MPI_COUNTS=DIR ...), each wrapper below counts its call and hands it to PMPI. A call
// counts as over the world when its communicator (a file's or a window's group) holds as many
// ranks as MPI_COMM_WORLD: a duplicate or a split that keeps every rank makes every rank wait for
// the slowest as the world itself does. Gathers also add the bytes this rank receives in them (at
// the root of a gather, on every rank of an all-gather), and each call its time inside. At
// MPI_Finalize each rank writes DIR/rank-R.json (R its world rank): the calls by name, over the
// world and over fewer ranks, their totals, the gathered bytes, the seconds inside MPI_Init and
// inside each call, and the seconds from MPI_Init's return to each call's first. Without
// GPURELAY_MPI_COUNTS it counts and writes nothing.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
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

int ranks_of(MPI_Group group) {
    int size = 0;
    PMPI_Group_size(group, &size);
    PMPI_Group_free(&group);
    return size;
}

int ranks_of(MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) return 0;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return size;
}

int ranks_of(MPI_File file) {
    MPI_Group group = MPI_GROUP_NULL;
    PMPI_File_get_group(file, &group);
    return ranks_of(group);
}

int ranks_of(MPI_Win window) {
    MPI_Group group = MPI_GROUP_NULL;
    PMPI_Win_get_group(window, &group);
    return ranks_of(group);
}

// Counts one call of `name` over `ranks` ranks.
void count(const char* name, int ranks) {
    if (!counting()) return;
    int world = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    Tally& t = tally();
    const std::lock_guard lock(t.mutex);
    ++(ranks == world ? t.world : t.fewer)[name];
}

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One collective call: counted as it starts (over the ranks of `over`: a communicator, a file, a
// window, or a count of ranks), timed until it returns.
class Call {
  public:
    template <typename Over>
    Call(const char* name, Over over) : name_(counting() ? name : nullptr) {
        if (name_ == nullptr) return;
        if constexpr (std::is_same_v<Over, int>) {
            count(name_, over);
        } else {
            count(name_, ranks_of(over));
        }
        Tally& t = tally();
        const std::lock_guard lock(t.mutex);
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

std::uint64_t type_bytes(MPI_Datatype type) {
    int size = 0;
    PMPI_Type_size(type, &size);
    return static_cast<std::uint64_t>(size);
}

// Bytes this rank receives in a gather: `per_rank` elements from each rank of `comm` (every
// rank's `counts`, for the v forms), on the root (`receives`).
void add_gathered(bool receives, MPI_Comm comm, const int* counts, int per_rank,
                  MPI_Datatype type) {
    if (!counting() || !receives) return;
    const int ranks = ranks_of(comm);
    std::uint64_t elements = 0;
    for (int r = 0; r < ranks; ++r)
        elements += static_cast<std::uint64_t>(counts ? counts[r] : per_rank);
    Tally& t = tally();
    const std::lock_guard lock(t.mutex);
    t.gathered_bytes += elements * type_bytes(type);
}

bool is_root(int root, MPI_Comm comm) {
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    return rank == root;
}

void write_number(std::FILE* out, std::uint64_t n) {
    std::fprintf(out, "%llu", static_cast<unsigned long long>(n));
}
void write_number(std::FILE* out, double x) { std::fprintf(out, "%.9g", x); }

template <typename Number>
void write_object(std::FILE* out, const std::map<std::string, Number>& values) {
    std::fputc('{', out);
    const char* separator = "";
    for (const auto& [name, value] : values) {
        std::fprintf(out, "%s\"%s\": ", separator, name.c_str());
        write_number(out, value);
        separator = ", ";
    }
    std::fputc('}', out);
}

std::uint64_t total(const std::map<std::string, std::uint64_t>& calls) {
    std::uint64_t sum = 0;
    for (const auto& entry : calls) sum += entry.second;
    return sum;
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
                 static_cast<unsigned long long>(total(t.world)));
    std::fprintf(out, "\"fewer_calls\": %llu, \"gathered_bytes\": %llu,\n \"world\": ",
                 static_cast<unsigned long long>(total(t.fewer)),
                 static_cast<unsigned long long>(t.gathered_bytes));
    write_object(out, t.world);
    std::fputs(",\n \"fewer\": ", out);
    write_object(out, t.fewer);
    std::fprintf(out, ",\n \"init_seconds\": %.9g, \"seconds\": ", t.init_seconds);
    write_object(out, t.seconds);
    std::fputs(",\n \"first_seconds\": ", out);
    write_object(out, t.first);
    std::fputs("}\n", out);
    std::fclose(out);
    std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace

// --- Blocking collectives
int MPI_Barrier(MPI_Comm comm) {
    const Call call("MPI_Barrier", comm);
    return PMPI_Barrier(comm);
}
int MPI_Bcast(void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm) {
    const Call call("MPI_Bcast", comm);
    return PMPI_Bcast(buffer, n, type, root, comm);
}
int MPI_Reduce(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
    const Call call("MPI_Reduce", comm);
    return PMPI_Reduce(send, recv, n, type, op, root, comm);
}
int MPI_Allreduce(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
    const Call call("MPI_Allreduce", comm);
    return PMPI_Allreduce(send, recv, n, type, op, comm);
}
int MPI_Scan(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    const Call call("MPI_Scan", comm);
    return PMPI_Scan(send, recv, n, type, op, comm);
}
int MPI_Exscan(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    const Call call("MPI_Exscan", comm);
    return PMPI_Exscan(send, recv, n, type, op, comm);
}
int MPI_Gather(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
               MPI_Datatype recv_type, int root, MPI_Comm comm) {
    const Call call("MPI_Gather", comm);
    add_gathered(is_root(root, comm), comm, nullptr, recv_n, recv_type);
    return PMPI_Gather(send, send_n, send_type, recv, recv_n, recv_type, root, comm);
}
int MPI_Gatherv(const void* send, int send_n, MPI_Datatype send_type, void* recv,
                const int recv_n[], const int displs[], MPI_Datatype recv_type, int root,
                MPI_Comm comm) {
    const Call call("MPI_Gatherv", comm);
    add_gathered(is_root(root, comm), comm, recv_n, 0, recv_type);
    return PMPI_Gatherv(send, send_n, send_type, recv, recv_n, displs, recv_type, root, comm);
}
int MPI_Allgather(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                  MPI_Datatype recv_type, MPI_Comm comm) {
    const Call call("MPI_Allgather", comm);
    add_gathered(true, comm, nullptr, recv_n, recv_type);
    return PMPI_Allgather(send, send_n, send_type, recv, recv_n, recv_type, comm);
}
int MPI_Allgatherv(const void* send, int send_n, MPI_Datatype send_type, void* recv,
                   const int recv_n[], const int displs[], MPI_Datatype recv_type, MPI_Comm comm) {
    const Call call("MPI_Allgatherv", comm);
    add_gathered(true, comm, recv_n, 0, recv_type);
    return PMPI_Allgatherv(send, send_n, send_type, recv, recv_n, displs, recv_type, comm);
}
int MPI_Scatter(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                MPI_Datatype recv_type, int root, MPI_Comm comm) {
    const Call call("MPI_Scatter", comm);
    return PMPI_Scatter(send, send_n, send_type, recv, recv_n, recv_type, root, comm);
}
int MPI_Scatterv(const void* send, const int send_n[], const int displs[], MPI_Datatype send_type,
                 void* recv, int recv_n, MPI_Datatype recv_type, int root, MPI_Comm comm) {
    const Call call("MPI_Scatterv", comm);
    return PMPI_Scatterv(send, send_n, displs, send_type, recv, recv_n, recv_type, root, comm);
}
int MPI_Alltoall(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                 MPI_Datatype recv_type, MPI_Comm comm) {
    const Call call("MPI_Alltoall", comm);
    return PMPI_Alltoall(send, send_n, send_type, recv, recv_n, recv_type, comm);
}
int MPI_Alltoallv(const void* send, const int send_n[], const int send_displs[],
                  MPI_Datatype send_type, void* recv, const int recv_n[], const int recv_displs[],
                  MPI_Datatype recv_type, MPI_Comm comm) {
    const Call call("MPI_Alltoallv", comm);
    return PMPI_Alltoallv(send, send_n, send_displs, send_type, recv, recv_n, recv_displs,
                          recv_type, comm);
}
int MPI_Reduce_scatter(const void* send, void* recv, const int recv_n[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm) {
    const Call call("MPI_Reduce_scatter", comm);
    return PMPI_Reduce_scatter(send, recv, recv_n, type, op, comm);
}
int MPI_Reduce_scatter_block(const void* send, void* recv, int recv_n, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
    const Call call("MPI_Reduce_scatter_block", comm);
    return PMPI_Reduce_scatter_block(send, recv, recv_n, type, op, comm);
}

// --- Non-blocking collectives: counted when posted
int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
    const Call call("MPI_Ibarrier", comm);
    return PMPI_Ibarrier(comm, request);
}
int MPI_Ibcast(void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
    const Call call("MPI_Ibcast", comm);
    return PMPI_Ibcast(buffer, n, type, root, comm, request);
}
int MPI_Ireduce(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
    const Call call("MPI_Ireduce", comm);
    return PMPI_Ireduce(send, recv, n, type, op, root, comm, request);
}
int MPI_Iallreduce(const void* send, void* recv, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
    const Call call("MPI_Iallreduce", comm);
    return PMPI_Iallreduce(send, recv, n, type, op, comm, request);
}
int MPI_Igather(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request* request) {
    const Call call("MPI_Igather", comm);
    add_gathered(is_root(root, comm), comm, nullptr, recv_n, recv_type);
    return PMPI_Igather(send, send_n, send_type, recv, recv_n, recv_type, root, comm, request);
}
int MPI_Iallgather(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                   MPI_Datatype recv_type, MPI_Comm comm, MPI_Request* request) {
    const Call call("MPI_Iallgather", comm);
    add_gathered(true, comm, nullptr, recv_n, recv_type);
    return PMPI_Iallgather(send, send_n, send_type, recv, recv_n, recv_type, comm, request);
}
int MPI_Ialltoall(const void* send, int send_n, MPI_Datatype send_type, void* recv, int recv_n,
                  MPI_Datatype recv_type, MPI_Comm comm, MPI_Request* request) {
    const Call call("MPI_Ialltoall", comm);
    return PMPI_Ialltoall(send, send_n, send_type, recv, recv_n, recv_type, comm, request);
}

// --- Communicators and windows: collective over the communicator they are made from
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
    const Call call("MPI_Comm_split", comm);
    return PMPI_Comm_split(comm, color, key, out);
}
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
    const Call call("MPI_Comm_split_type", comm);
    return PMPI_Comm_split_type(comm, type, key, info, out);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out) {
    const Call call("MPI_Comm_dup", comm);
    return PMPI_Comm_dup(comm, out);
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* out) {
    const Call call("MPI_Comm_create", comm);
    return PMPI_Comm_create(comm, group, out);
}
// Collective over the group's ranks only.
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* out) {
    int ranks = 0;
    PMPI_Group_size(group, &ranks);
    const Call call("MPI_Comm_create_group", ranks);
    return PMPI_Comm_create_group(comm, group, tag, out);
}
int MPI_Comm_free(MPI_Comm* comm) {
    const Call call("MPI_Comm_free", comm != nullptr ? ranks_of(*comm) : 0);
    return PMPI_Comm_free(comm);
}
int MPI_Win_create(void* base, MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win* window) {
    const Call call("MPI_Win_create", comm);
    return PMPI_Win_create(base, size, unit, info, comm, window);
}
int MPI_Win_allocate(MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void* base,
                     MPI_Win* window) {
    const Call call("MPI_Win_allocate", comm);
    return PMPI_Win_allocate(size, unit, info, comm, base, window);
}
int MPI_Win_allocate_shared(MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void* base,
                            MPI_Win* window) {
    const Call call("MPI_Win_allocate_shared", comm);
    return PMPI_Win_allocate_shared(size, unit, info, comm, base, window);
}
int MPI_Win_fence(int assertion, MPI_Win window) {
    const Call call("MPI_Win_fence", window);
    return PMPI_Win_fence(assertion, window);
}
int MPI_Win_free(MPI_Win* window) {
    const Call call("MPI_Win_free", window != nullptr ? ranks_of(*window) : 0);
    return PMPI_Win_free(window);
}

// --- MPI-IO's collective calls, over the file's communicator (HDF5 makes them through MPI-IO)
int MPI_File_open(MPI_Comm comm, const char* name, int mode, MPI_Info info, MPI_File* file) {
    const Call call("MPI_File_open", comm);
    return PMPI_File_open(comm, name, mode, info, file);
}
int MPI_File_close(MPI_File* file) {
    const Call call("MPI_File_close", file != nullptr ? ranks_of(*file) : 0);
    return PMPI_File_close(file);
}
int MPI_File_sync(MPI_File file) {
    const Call call("MPI_File_sync", file);
    return PMPI_File_sync(file);
}
int MPI_File_set_size(MPI_File file, MPI_Offset size) {
    const Call call("MPI_File_set_size", file);
    return PMPI_File_set_size(file, size);
}
int MPI_File_preallocate(MPI_File file, MPI_Offset size) {
    const Call call("MPI_File_preallocate", file);
    return PMPI_File_preallocate(file, size);
}
int MPI_File_set_view(MPI_File file, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      const char* representation, MPI_Info info) {
    const Call call("MPI_File_set_view", file);
    return PMPI_File_set_view(file, disp, etype, filetype, representation, info);
}
int MPI_File_set_atomicity(MPI_File file, int flag) {
    const Call call("MPI_File_set_atomicity", file);
    return PMPI_File_set_atomicity(file, flag);
}
int MPI_File_write_all(MPI_File file, const void* buffer, int n, MPI_Datatype type,
                       MPI_Status* status) {
    const Call call("MPI_File_write_all", file);
    return PMPI_File_write_all(file, buffer, n, type, status);
}
int MPI_File_write_at_all(MPI_File file, MPI_Offset offset, const void* buffer, int n,
                          MPI_Datatype type, MPI_Status* status) {
    const Call call("MPI_File_write_at_all", file);
    return PMPI_File_write_at_all(file, offset, buffer, n, type, status);
}
int MPI_File_read_all(MPI_File file, void* buffer, int n, MPI_Datatype type, MPI_Status* status) {
    const Call call("MPI_File_read_all", file);
    return PMPI_File_read_all(file, buffer, n, type, status);
}
int MPI_File_read_at_all(MPI_File file, MPI_Offset offset, void* buffer, int n, MPI_Datatype type,
                         MPI_Status* status) {
    const Call call("MPI_File_read_at_all", file);
    return PMPI_File_read_at_all(file, offset, buffer, n, type, status);
}

// MPI_Init's own time (at scale, the launch's largest part of set-up); the first call times are
// from its return.
int MPI_Init(int* argc, char*** argv) {
    const Clock::time_point start = Clock::now();
    const int status = PMPI_Init(argc, argv);
    tally().init_seconds = since(start);
    tally().initialized = Clock::now();
    return status;
}
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
    const Clock::time_point start = Clock::now();
    const int status = PMPI_Init_thread(argc, argv, required, provided);
    tally().init_seconds = since(start);
    tally().initialized = Clock::now();
    return status;
}

int MPI_Finalize() {
    write_counts();
    return PMPI_Finalize();
}
