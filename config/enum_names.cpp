// The names of the enumerations, as the deck, the files and the report write them: one list per
// enumeration, in the order of its values.
#include <initializer_list>

#include "config/config.hpp"

namespace gpurelay {
namespace {

// The names of `v`'s enumeration, in the order of its values.
template <class Enum>
std::string_view name_in(std::initializer_list<std::string_view> names, Enum v) {
    const auto i = static_cast<std::size_t>(v);
    return i < names.size() ? names.begin()[i] : "?";
}

}  // namespace

std::string_view to_string(DeviceKind v) { return name_in({"auto", "cuda", "cpu"}, v); }
std::string_view to_string(DType v) { return name_in({"float32", "float64"}, v); }
std::string_view to_string(OverlapMode v) { return name_in({"on", "off", "compare"}, v); }
std::string_view to_string(Pairing v) { return name_in({"adjacent", "split"}, v); }
std::string_view to_string(Pattern v) {
    return name_in({"pairs", "broadcast", "allreduce", "relay"}, v);
}
std::string_view to_string(Staging v) { return name_in({"auto", "on"}, v); }
std::string_view to_string(IpcEngine v) { return name_in({"copy", "sm"}, v); }
std::string_view to_string(Launch v) { return name_in({"host", "device"}, v); }
std::string_view to_string(HostWaitMode v) { return name_in({"auto", "prompt", "sparing"}, v); }
std::string_view to_string(Timing v) { return name_in({"auto", "phases", "sampled", "steps"}, v); }
std::string_view to_string(WriteMode v) { return name_in({"all", "last", "none", "every"}, v); }
std::string_view to_string(StepRecord v) {
    return name_in({"auto", "all", "every", "last", "none"}, v);
}

std::size_t dtype_size(DType v) {
    return with_dtype(v, []<typename T>() { return sizeof(T); });
}

}  // namespace gpurelay
