#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/device.hpp"
#include "runtime/error.hpp"
#include "runtime/host_stream.hpp"
#include "runtime/slot_flags.hpp"

namespace gpurelay {
namespace {

void free_aligned(void* p) noexcept { std::free(p); }

HostStream& host_stream(Stream& stream) { return dynamic_cast<HostStream&>(stream); }

class HostDevice final : public Device {
  public:
    explicit HostDevice(std::chrono::milliseconds wait_timeout) : wait_timeout_(wait_timeout) {}

    Backend backend() const override { return Backend::host; }
    DeviceInfo info() const override { return {"host CPU", "", -1, 0, 0}; }

    std::unique_ptr<Stream> make_stream(bool, std::string_view label) override {
        return std::make_unique<HostStream>(wait_timeout_, std::string(label));
    }
    std::unique_ptr<Event> make_event(EventUse) override {
        return std::make_unique<HostEvent>(wait_timeout_);
    }
    Buffer allocate(std::size_t bytes) override {
        // 64-byte alignment: whole cache lines, and wide enough for any vector load.
        const std::size_t rounded = (bytes + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
        if (p == nullptr) {
            throw runtime_error("out of host memory allocating " + std::to_string(bytes) +
                                " bytes");
        }
        return Buffer(p, bytes, free_aligned);
    }
    Buffer allocate_host(std::size_t bytes) override { return allocate(bytes); }
    void copy_async(void* dst, const void* src, std::size_t bytes, Stream& stream) override {
        host_stream(stream).enqueue([=] { std::memcpy(dst, src, bytes); });
    }
    void fill_async(void* dst, int byte, std::size_t bytes, Stream& stream) override {
        host_stream(stream).enqueue([=] { std::memset(dst, byte, bytes); });
    }
    void enqueue_host(std::function<void()> fn, Stream& stream) override {
        host_stream(stream).enqueue(std::move(fn));
    }
    void wait_word(const std::uint32_t* word, std::uint32_t value, Stream& stream,
                   const char* what) override {
        // A thread of this process stores every such word, which ends the wait's pause at once.
        host_stream(stream).enqueue([word, value, what, timeout = wait_timeout_] {
            wait_until(word, value, timeout, what, std::chrono::microseconds(100));
        });
    }
    void write_word(std::uint32_t* word, std::uint32_t value, Stream& stream) override {
        host_stream(stream).enqueue([word, value] { store_release(word, value); });
    }

  private:
    std::chrono::milliseconds wait_timeout_;
};

}  // namespace

std::unique_ptr<Device> make_host_device(std::chrono::milliseconds wait_timeout) {
    return std::make_unique<HostDevice>(wait_timeout);
}

}  // namespace gpurelay
