// The names of the enumerations, as the deck, the files and the report write them: one list per
// enumeration, in the order of its values.
#include <span>

#include "config/config.hpp"

namespace gpurelay {
namespace {

template <class Enum>
std::string_view name_in(std::span<const std::string_view> names, Enum v) {
    const auto i = static_cast<std::size_t>(v);
    return i < names.size() ? names[i] : "?";
}

constexpr std::string_view kDeviceKinds[] = {"auto", "cuda", "cpu"};
constexpr std::string_view kDTypes[] = {"float32", "float64"};
constexpr std::string_view kOverlapModes[] = {"on", "off", "compare"};
constexpr std::string_view kPairings[] = {"adjacent", "split"};
constexpr std::string_view kPatterns[] = {"pairs", "broadcast", "allreduce", "relay"};
constexpr std::string_view kStagings[] = {"auto", "on"};
constexpr std::string_view kIpcEngines[] = {"copy", "sm"};
constexpr std::string_view kLaunches[] = {"host", "device"};
constexpr std::string_view kHostWaitModes[] = {"auto", "prompt", "sparing"};
constexpr std::string_view kTimings[] = {"auto", "phases", "sampled", "steps"};
constexpr std::string_view kWriteModes[] = {"all", "last", "none", "every"};
constexpr std::string_view kStepRecords[] = {"auto", "all", "every", "last", "none"};

}  // namespace

std::string_view to_string(DeviceKind v) { return name_in(kDeviceKinds, v); }
std::string_view to_string(DType v) { return name_in(kDTypes, v); }
std::string_view to_string(OverlapMode v) { return name_in(kOverlapModes, v); }
std::string_view to_string(Pairing v) { return name_in(kPairings, v); }
std::string_view to_string(Pattern v) { return name_in(kPatterns, v); }
std::string_view to_string(Staging v) { return name_in(kStagings, v); }
std::string_view to_string(IpcEngine v) { return name_in(kIpcEngines, v); }
std::string_view to_string(Launch v) { return name_in(kLaunches, v); }
std::string_view to_string(HostWaitMode v) { return name_in(kHostWaitModes, v); }
std::string_view to_string(Timing v) { return name_in(kTimings, v); }
std::string_view to_string(WriteMode v) { return name_in(kWriteModes, v); }
std::string_view to_string(StepRecord v) { return name_in(kStepRecords, v); }

std::size_t dtype_size(DType v) {
    return with_dtype(v, []<typename T>() { return sizeof(T); });
}

}  // namespace gpurelay
