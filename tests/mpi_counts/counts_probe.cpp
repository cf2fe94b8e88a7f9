// A program whose collective calls are known, for the count's own test (check_counts.py): under
// mpirun -np 4 with the count preloaded, every rank's JSON must hold exactly these calls. Over the
// world: calls on MPI_COMM_WORLD and on a duplicate of it; over fewer ranks: calls on pairs of
// ranks made by a split and by MPI_Comm_create_group, on a file of one rank and a window of a
// pair. ARGV[1]: a folder for the two files it makes.
#include <mpi.h>

#include <cstdio>
#include <string>

namespace {

// Over the world: 3 barriers, a broadcast, an all-reduce, 3 non-blocking all-reduces, a gather
// (3 ints a rank to rank 0), an all-gather (2 doubles a rank), a duplicate and its free, a
// split, and a file's open, collective write and close.
void over_the_world(const std::string& folder, MPI_Comm& pair) {
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    int value = rank, sum = 0;
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 3; ++i) {
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    int three[3] = {rank, rank, rank};
    int gathered[64 * 3];
    MPI_Gather(three, 3, MPI_INT, gathered, 3, MPI_INT, 0, MPI_COMM_WORLD);
    double two[2] = {1.0, 2.0};
    double all[64 * 2];
    MPI_Allgather(two, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Comm copy = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Barrier(copy);
    MPI_Comm_free(&copy);
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_File file = MPI_FILE_NULL;
    MPI_File_open(MPI_COMM_WORLD, (folder + "/shared.bin").c_str(),
                  MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file);
    MPI_File_write_at_all(file, rank * 4, &rank, 1, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&file);
}

// Over fewer ranks: 2 barriers, an all-reduce, a gather (1 int a rank to the pair's first), a
// non-blocking broadcast and a shared window (its allocation and free) on the split's pair; a
// pair made by MPI_Comm_create_group; a file of one rank (open, close); both pairs freed.
void over_fewer(const std::string& folder, MPI_Comm pair) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(pair);
    MPI_Barrier(pair);
    int sum = 0, gathered[2];
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, pair);
    MPI_Gather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, 0, pair);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(&sum, 1, MPI_INT, 0, pair, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    void* base = nullptr;
    MPI_Win window = MPI_WIN_NULL;
    MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, pair, &base, &window);
    MPI_Win_free(&window);

    MPI_Group world = MPI_GROUP_NULL, two = MPI_GROUP_NULL;
    const int ranks[2] = {rank & ~1, rank | 1};
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 2, ranks, &two);
    MPI_Comm made = MPI_COMM_NULL;
    MPI_Comm_create_group(MPI_COMM_WORLD, two, 7, &made);
    MPI_Group_free(&two);
    MPI_Group_free(&world);
    MPI_Comm_free(&made);

    MPI_File file = MPI_FILE_NULL;
    MPI_File_open(MPI_COMM_SELF, (folder + "/own-" + std::to_string(rank) + ".bin").c_str(),
                  MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file);
    MPI_File_close(&file);
    MPI_Comm_free(&pair);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2 || size != 4) {
        std::fprintf(stderr, "usage: mpirun -np 4 mpi_counts_probe FOLDER\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm pair = MPI_COMM_NULL;
    over_the_world(argv[1], pair);
    over_fewer(argv[1], pair);
    MPI_Finalize();
    return 0;
}
