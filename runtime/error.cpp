#include "runtime/error.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace gpurelay {

void throw_library_error(const char* library, const char* call, const char* file, int line,
                         const std::string& detail) {
    throw runtime_error(std::string(library) + " error in " + call + " at " + file + ":" +
                        std::to_string(line) + ": " + detail);
}

Error timeout_error(const std::string& what, std::chrono::milliseconds timeout) {
    return runtime_error(what + " did not finish within " + std::to_string(timeout.count() / 1000) +
                         " s (timeout_s): a peer stopped or the run is stuck");
}

namespace {

std::atomic<FatalHandler> installed_handler{nullptr};
std::atomic<bool> process_ending{false};

[[noreturn]] void exit_with(const Error& error) noexcept {
    claim_process_end();
    std::fprintf(stderr, "gpurelay: %s\n", error.what());
    std::fflush(stderr);
    std::_Exit(static_cast<int>(error.code()));
}

}  // namespace

void claim_process_end() noexcept {
    if (!process_ending.exchange(true)) return;
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void set_fatal_handler(FatalHandler handler) { installed_handler.store(handler); }
FatalHandler fatal_handler() { return installed_handler.load(); }

void fail_fatally(std::exception_ptr error) noexcept {
    FatalHandler handler = installed_handler.load();
    if (handler == nullptr) handler = exit_with;
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        handler(e);
    } catch (const std::exception& e) {
        handler(runtime_error(e.what()));
    } catch (...) {
        handler(runtime_error("unknown error"));
    }
    std::terminate();
}

}  // namespace gpurelay
