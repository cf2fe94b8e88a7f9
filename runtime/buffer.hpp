// Owned memory (device, pinned host or plain host), freed by the function that matches its kind.
#pragma once

#include <cstddef>
#include <utility>

#include "runtime/span.hpp"

namespace gpurelay {

class Buffer {
  public:
    using FreeFn = void (*)(void*) noexcept;

    Buffer() = default;
    Buffer(void* data, std::size_t bytes, FreeFn free_fn)
        : data_(data), bytes_(bytes), free_(free_fn) {}
    ~Buffer() {
        if (data_ != nullptr) free_(data_);
    }
    Buffer(Buffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), bytes_(other.bytes_), free_(other.free_) {}
    Buffer& operator=(Buffer&& other) noexcept {
        if (this != &other) {
            if (data_ != nullptr) free_(data_);
            data_ = std::exchange(other.data_, nullptr);
            bytes_ = other.bytes_;
            free_ = other.free_;
        }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }
    template <typename T>
    Span<T> as() const {
        return {static_cast<T*>(data_), bytes_ / sizeof(T)};
    }

  private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
    FreeFn free_ = nullptr;
};

}  // namespace gpurelay
