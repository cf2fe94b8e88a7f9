// For the unit tests that run under mpirun (their main() is tests/mpi_main.cpp).
#pragma once

#include <mpi.h>

namespace gpurelay::test {

inline int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

inline int world_size() {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

}  // namespace gpurelay::test
