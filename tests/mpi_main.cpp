// main() for unit tests that need MPI: MPI with thread support (stream threads and the staged
// transport's proxies call it), GoogleTest's output from rank 0 only, and one exit code for
// every rank: non-zero when a test failed on any rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    ::testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
    }
    int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank != 0 && failed) std::fprintf(stderr, "rank %d: a test failed here\n", rank);
    MPI_Finalize();
    return any_failed;
}
