// What a collective transport checks of the sides it is given (transport.hpp says what they mean):
// shared by the MPI and NCCL collectives, so both refuse a misuse alike.
#pragma once

#include <string>

#include "comm/transport.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

// The one stream a collective is queued on. The sides must suit `op` and this rank (`root`: rank
// 0 of the group), and name one stream when both are given; a runtime error otherwise.
inline Stream& collective_stream(Collective op, bool root, const SendSide* send,
                                 const RecvSide* recv) {
    const bool sides_fit = op == Collective::allreduce
                               ? send != nullptr && recv != nullptr
                               : (root ? send != nullptr : send == nullptr && recv != nullptr);
    if (!sides_fit) {
        throw runtime_error("a " + std::string(to_string(op)) +
                            " exchange got the wrong sides for this rank");
    }
    if (send != nullptr && recv != nullptr && &send->stream != &recv->stream) {
        throw runtime_error("a collective runs on one stream, but its two sides name two");
    }
    return send != nullptr ? send->stream : recv->stream;
}

// The bytes of one collective's tensor.
inline std::size_t collective_bytes(const SendSide* send, const RecvSide* recv) {
    return send != nullptr ? send->bytes : recv->bytes;
}

}  // namespace gpurelay
