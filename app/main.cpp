// gpurelay: a producer rank makes tensors with kernel A and streams them to a consumer rank, which
// runs kernel B on each as it arrives while kernel C overlaps the transfer. See README.md.
#include "app/run.hpp"

int main(int argc, char** argv) { return gpurelay::run_gpurelay(argc, argv); }
