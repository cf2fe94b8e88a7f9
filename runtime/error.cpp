#include "runtime/error.hpp"

#include <atomic>

namespace gpurelay {

void throw_library_error(const char* library, const char* call, const char* file, int line,
                         const std::string& detail) {
    throw runtime_error(std::string(library) + " error in " + call + " at " + file + ":" +
                        std::to_string(line) + ": " + detail);
}

namespace {
std::atomic<FatalHandler> installed_handler{nullptr};
}

void set_fatal_handler(FatalHandler handler) { installed_handler.store(handler); }
FatalHandler fatal_handler() { return installed_handler.load(); }

void fail_fatally(std::exception_ptr error) noexcept {
    FatalHandler handler = installed_handler.load();
    if (handler != nullptr) {
        try {
            std::rethrow_exception(error);
        } catch (const Error& e) {
            handler(e);
        } catch (const std::exception& e) {
            handler(runtime_error(e.what()));
        } catch (...) {
            handler(runtime_error("unknown error"));
        }
    }
    std::terminate();
}

}  // namespace gpurelay
