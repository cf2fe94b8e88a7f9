// Sequence words in host memory: 32-bit counts that only grow, which a device's stream writes or
// holds for (Device::write_word, Device::wait_word) and host threads set or wait for, in this
// process or, through shared memory, another. A wait "until the word reaches n" compares in the
// wrap-around order of sequence numbers, so it is right whenever it is taken: neither side needs
// to know how far the other has got.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpurelay {

// Whether a word holding `word` has reached `value`: (int32_t)(word - value) >= 0.
bool word_reached(std::uint32_t word, std::uint32_t value);
// Sets `*word` to `value` (a release store: what this thread wrote before is visible to whoever
// sees the value) and wakes this process's host threads waiting in wait_host_word.
void store_host_word(std::uint32_t* word, std::uint32_t value);
// Blocks the calling thread until `*word` has reached `value`; throws a timeout error naming
// `what` after `timeout`. It polls (runtime/poll.hpp): a spin of 100 us, as the writer is usually
// about to store, then pauses up to `longest_pause` under the `sparing` policy. A store_host_word
// in this process ends a pause at once; a word that another process or a GPU writes wakes no one
// and is seen at the next look, so the longest pause is how late that can be, traded against
// the cores a long wait's looks take.
void wait_host_word(const std::uint32_t* word, std::uint32_t value,
                    std::chrono::milliseconds timeout, const char* what,
                    std::chrono::microseconds longest_pause);

}  // namespace gpurelay
