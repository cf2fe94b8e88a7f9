// The resource check: what every rank will hold on its device and its node's host memory, and
// what the result file will take, against what there is, before anything is allocated.
#pragma once

#include "app/setup.hpp"

namespace gpurelay {

// The result file's size once complete, every size's datasets (an upper bound).
double output_file_bytes(const Config& config, int world_size, int pairs);

// Collective over MPI_COMM_WORLD, once `setup` has its device, memory plan and output_bytes:
// every rank leaves with the same usage error (the figures, exit 2) when anything does not fit.
void check_resources(const Setup& setup, int rank);

}  // namespace gpurelay
