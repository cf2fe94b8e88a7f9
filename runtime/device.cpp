// The answers that do not depend on a CUDA build being present, and a build without CUDA's.
#include "runtime/device.hpp"

#include "runtime/error.hpp"
#include "runtime/profiler.hpp"

namespace gpurelay {

std::unique_ptr<GraphCapture> Device::begin_capture(Stream&, const std::vector<Stream*>&) {
    throw runtime_error("graphs need the CUDA path: host streams cannot be captured");
}

#if !defined(GPURELAY_HAVE_CUDA)
std::unique_ptr<Device> make_cuda_device(int) {
    throw usage_error("device = \"cuda\" but this gpurelay was built without CUDA");
}
int cuda_device_count() { return 0; }
bool cuda_built() { return false; }
std::string cuda_version_string() { return "none"; }
std::string describe_peer_link(const std::string&, const std::string&) {
    return "host memory (CPU path)";
}
void profiler_start(Backend) {}
void profiler_stop(Backend) {}
#endif

}  // namespace gpurelay
