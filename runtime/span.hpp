// A pointer and a length that host code and CUDA kernels both take (nvcc: C++17, no std::span).
#pragma once

#include <cstddef>
#include <type_traits>

#if defined(__CUDACC__)
#define GPURELAY_HD __host__ __device__
#else
#define GPURELAY_HD
#endif

namespace gpurelay {

template <typename T>
struct Span {
    T* ptr = nullptr;
    std::size_t count = 0;

    GPURELAY_HD T* data() const { return ptr; }
    GPURELAY_HD std::size_t size() const { return count; }
    GPURELAY_HD T& operator[](std::size_t i) const { return ptr[i]; }
    // A span of T is also a read-only span of T (only offered where T is not already const).
    template <typename U = T, typename = std::enable_if_t<!std::is_const_v<U>>>
    GPURELAY_HD operator Span<const U>() const {
        return {ptr, count};
    }
};

}  // namespace gpurelay
