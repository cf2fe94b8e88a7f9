// Built only with CUDA: the NVTX3 headers come with the toolkit.
#include "runtime/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpurelay::nvtx {
namespace {

// Created on first use (loading the tool, if any): a run without ranges never touches NVTX.
nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t handle = [] {
        const nvtxDomainHandle_t created = nvtxDomainCreateA("gpurelay");
        nvtxDomainNameCategoryA(created, kWarmupCategory, "warm-up");
        return created;
    }();
    return handle;
}

nvtxEventAttributes_t attributes_of(const char* message, std::uint32_t argb) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.colorType = NVTX_COLOR_ARGB;
    attributes.color = argb;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = message;
    return attributes;
}

}  // namespace

void push(const char* message, std::uint32_t argb) {
    const nvtxEventAttributes_t attributes = attributes_of(message, argb);
    nvtxDomainRangePushEx(domain(), &attributes);
}

void push_step(const char* phase, std::uint32_t argb, std::int64_t step, bool warmup) {
    nvtxEventAttributes_t attributes = attributes_of(phase, argb);
    attributes.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    attributes.payload.llValue = step;
    attributes.category = warmup ? kWarmupCategory : 0;
    nvtxDomainRangePushEx(domain(), &attributes);
}

void pop() { nvtxDomainRangePop(domain()); }

void name_current_thread(const char* name) {
    // NVTX names OS threads by their kernel id (what Nsight Systems shows as the TID).
    nvtxNameOsThreadA(static_cast<std::uint32_t>(::syscall(SYS_gettid)), name);
}

}  // namespace gpurelay::nvtx
