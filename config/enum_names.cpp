// The names of the enumerations, as the deck, the files and the report write them.
#include "config/config.hpp"

namespace gpurelay {

std::string_view to_string(DeviceKind v) {
    switch (v) {
        case DeviceKind::auto_select:
            return "auto";
        case DeviceKind::cuda:
            return "cuda";
        case DeviceKind::cpu:
            return "cpu";
    }
    return "?";
}

std::string_view to_string(DType v) {
    switch (v) {
        case DType::float32:
            return "float32";
        case DType::float64:
            return "float64";
    }
    return "?";
}

std::string_view to_string(OverlapMode v) {
    switch (v) {
        case OverlapMode::on:
            return "on";
        case OverlapMode::off:
            return "off";
        case OverlapMode::compare:
            return "compare";
    }
    return "?";
}

std::string_view to_string(Pairing v) {
    switch (v) {
        case Pairing::adjacent:
            return "adjacent";
        case Pairing::split:
            return "split";
    }
    return "?";
}

std::string_view to_string(Pattern v) {
    switch (v) {
        case Pattern::pairs:
            return "pairs";
        case Pattern::broadcast:
            return "broadcast";
        case Pattern::allreduce:
            return "allreduce";
        case Pattern::relay:
            return "relay";
    }
    return "?";
}

std::string_view to_string(Staging v) {
    switch (v) {
        case Staging::auto_select:
            return "auto";
        case Staging::on:
            return "on";
    }
    return "?";
}

std::string_view to_string(IpcEngine v) {
    switch (v) {
        case IpcEngine::copy:
            return "copy";
        case IpcEngine::sm:
            return "sm";
    }
    return "?";
}

std::string_view to_string(Launch v) {
    switch (v) {
        case Launch::host:
            return "host";
        case Launch::device:
            return "device";
    }
    return "?";
}

std::string_view to_string(HostWaitMode v) {
    switch (v) {
        case HostWaitMode::auto_select:
            return "auto";
        case HostWaitMode::prompt:
            return "prompt";
        case HostWaitMode::sparing:
            return "sparing";
    }
    return "?";
}

std::string_view to_string(Timing v) {
    switch (v) {
        case Timing::auto_select:
            return "auto";
        case Timing::phases:
            return "phases";
        case Timing::sampled:
            return "sampled";
        case Timing::steps:
            return "steps";
    }
    return "?";
}

std::string_view to_string(WriteMode v) {
    switch (v) {
        case WriteMode::all:
            return "all";
        case WriteMode::last:
            return "last";
        case WriteMode::none:
            return "none";
        case WriteMode::every:
            return "every";
    }
    return "?";
}

std::string_view to_string(StepRecord v) {
    switch (v) {
        case StepRecord::auto_select:
            return "auto";
        case StepRecord::all:
            return "all";
        case StepRecord::every:
            return "every";
        case StepRecord::last:
            return "last";
        case StepRecord::none:
            return "none";
    }
    return "?";
}

std::size_t dtype_size(DType v) {
    return with_dtype(v, []<typename T>() { return sizeof(T); });
}

}  // namespace gpurelay
