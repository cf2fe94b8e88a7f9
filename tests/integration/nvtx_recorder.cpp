// A minimal NVTX tool for tests: loaded through NVTX_INJECTION64_PATH, it writes every range push
// and pop, and every thread name, to a log, so a test can check the ranges gpurelay emits
// without Nsight Systems (or a GPU).
//
// Log: $GPURELAY_NVTX_LOG.rank<R>.pid<P> (R from the launcher's rank variable, else "x"), one
// line per call, in call order:
//   <tid> push <domain> <0xAARRGGBB> <category> <payload> <message>
//   <tid> pop <domain>
//   <tid> name <named tid> <name>
//   <tid> category <domain> <id> <name>
// The default domain is written "-"; a payload other than an int64 one is written "-".
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

struct Domain {
    std::string name;
};

std::mutex log_mutex;
std::FILE* log_file = nullptr;

long current_tid() { return ::syscall(SYS_gettid); }

const char* domain_name(nvtxDomainHandle_t domain) {
    return domain == nullptr ? "-" : reinterpret_cast<const Domain*>(domain)->name.c_str();
}

// Lines are flushed one by one: a rank that dies still leaves what it did.
void write_line(const std::string& line) {
    const std::lock_guard lock(log_mutex);
    if (log_file == nullptr) return;
    std::fputs(line.c_str(), log_file);
    std::fputc('\n', log_file);
    std::fflush(log_file);
}

std::string message_text(const nvtxEventAttributes_t* attributes) {
    if (attributes == nullptr) return "(no attributes)";
    if (attributes->messageType == NVTX_MESSAGE_TYPE_ASCII &&
        attributes->message.ascii != nullptr) {
        return attributes->message.ascii;
    }
    return "(non-ASCII message)";
}

int push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
    char colour[16] = "0x00000000";
    std::string category = "0";
    std::string payload = "-";
    if (attributes != nullptr) {
        if (attributes->colorType == NVTX_COLOR_ARGB) {
            std::snprintf(colour, sizeof colour, "0x%08x", attributes->color);
        }
        category = std::to_string(attributes->category);
        if (attributes->payloadType == NVTX_PAYLOAD_TYPE_INT64) {
            payload = std::to_string(attributes->payload.llValue);
        }
    }
    write_line(std::to_string(current_tid()) + " push " + domain_name(domain) + " " + colour + " " +
               category + " " + payload + " " + message_text(attributes));
    return 0;
}

int pop(nvtxDomainHandle_t domain) {
    write_line(std::to_string(current_tid()) + " pop " + domain_name(domain));
    return 0;
}

nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
    // Domains live as long as the process; NVTX gives no way to learn when they are unused.
    return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name != nullptr ? name : ""});
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
    return push(domain, a);
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t domain) { return pop(domain); }
void NVTX_API domain_name_category_a(nvtxDomainHandle_t domain, std::uint32_t id,
                                     const char* name) {
    write_line(std::to_string(current_tid()) + " category " + domain_name(domain) + " " +
               std::to_string(id) + " " + (name != nullptr ? name : ""));
}
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) { return push(nullptr, a); }
int NVTX_API range_push_a(const char* message) {
    nvtxEventAttributes_t attributes{};
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = message;
    return push(nullptr, &attributes);
}
int NVTX_API range_pop() { return pop(nullptr); }
void NVTX_API name_os_thread_a(std::uint32_t tid, const char* name) {
    write_line(std::to_string(current_tid()) + " name " + std::to_string(tid) + " " +
               (name != nullptr ? name : ""));
}

std::string log_path(const char* base) {
    std::string rank = "x";
    for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
        if (const char* value = std::getenv(variable); value != nullptr) {
            rank = value;
            break;
        }
    }
    return std::string(base) + ".rank" + rank + ".pid" + std::to_string(::getpid());
}

// Points entry `id` of `module`'s table at `function`; false if the table has no such entry.
template <class Function>
bool install(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module, unsigned id,
             Function function) {
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr ||
        id > size || table[id] == nullptr) {
        return false;
    }
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
    return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
    const char* base = std::getenv("GPURELAY_NVTX_LOG");
    if (base == nullptr || *base == '\0') return 0;  // nothing to record to: stay detached
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr) return 0;
    {
        const std::lock_guard lock(log_mutex);
        log_file = std::fopen(log_path(base).c_str(), "a");
        if (log_file == nullptr) return 0;
    }
    const bool ok =
        install(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a) &&
        install(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy) &&
        install(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
                &domain_range_push_ex) &&
        install(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop,
                &domain_range_pop) &&
        install(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryA,
                &domain_name_category_a) &&
        install(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, &range_push_ex) &&
        install(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, &range_push_a) &&
        install(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, &range_pop) &&
        install(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameOsThreadA, &name_os_thread_a);
    return ok ? 1 : 0;
}
