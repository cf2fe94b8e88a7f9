// What a collective checks of the sides it is given (transport.hpp says what they mean): shared by
// the MPI and NCCL collectives, so both refuse a misuse alike.
#pragma once

#include <string>

#include "mpi/pairing.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

// The sides must suit `op` and this rank (`root`: rank 0 of the group); a runtime error otherwise.
inline void check_collective_sides(Collective op, bool root, const void* send, const void* recv) {
    const bool sides_fit = op == Collective::allreduce
                               ? send != nullptr && recv != nullptr
                               : (root ? send != nullptr : send == nullptr && recv != nullptr);
    if (!sides_fit) {
        throw runtime_error("a " + std::string(to_string(op)) +
                            " call got the wrong sides for this rank");
    }
}

}  // namespace gpurelay
