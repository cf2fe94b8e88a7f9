// The one error module: exception types that carry the documented exit code, and CUDA_CHECK /
// NCCL_CHECK, which turn a failed call into one (MPI_CHECK is mpi/error.hpp's: no MPI here).
#pragma once

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>

namespace gpurelay {

// Exit codes documented in docs/OPERATIONS.md; every rank of a job ends with the same one.
enum class ExitCode : int {
    ok = 0,
    usage = 2,         // bad input deck, flag, rank count or path
    verification = 3,  // a result differed from the formula
    runtime = 4,       // device, transport or file failure at run time
    interrupted_int = 130,
    interrupted_usr1 = 138,
    interrupted_term = 143,
};

// An error that reaches main(): one line of text and the exit code the job ends with.
class Error : public std::runtime_error {
  public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ExitCode code() const noexcept { return code_; }

  private:
    ExitCode code_;
};

// A wait that outlasted `timeout` (timeout_s): exit 4, worded the same wherever it happens.
Error timeout_error(const std::string& what, std::chrono::milliseconds timeout);

// Bad input or usage: exit 2.
inline Error usage_error(const std::string& message) { return Error(ExitCode::usage, message); }
// A failure while running: exit 4.
inline Error runtime_error(const std::string& message) { return Error(ExitCode::runtime, message); }

// Builds "<library> error in <call> at <file>:<line>: <detail>" and throws it as a runtime error.
[[noreturn]] void throw_library_error(const char* library, const char* call, const char* file,
                                      int line, const std::string& detail);

// Errors raised where no caller can catch them (a stream's worker thread, a CUDA host function)
// go to this handler; main installs one that prints the line and ends every rank of the job.
using FatalHandler = void (*)(const Error& error) noexcept;
void set_fatal_handler(FatalHandler handler);
FatalHandler fatal_handler();
// Calls the handler with `error` (a runtime error when it is not an Error); without one (before
// MPI is up), prints "gpurelay: MESSAGE" on stderr and exits with the error's code.
[[noreturn]] void fail_fatally(std::exception_ptr error) noexcept;
// Whoever ends the process calls this first. It returns in the first thread to call it; others
// (several waits of one rank may time out together) sleep until it has ended the process, so a rank
// prints one line and calls MPI_Abort once: Open MPI's abort from two threads crashed (exit 139).
void claim_process_end() noexcept;

}  // namespace gpurelay

#define GPURELAY_CHECK_IMPL(library, ok_expr, detail_expr, call)                                \
    do {                                                                                        \
        auto gpurelay_status_ = (call);                                                         \
        if (!(ok_expr)) {                                                                       \
            ::gpurelay::throw_library_error(library, #call, __FILE__, __LINE__, (detail_expr)); \
        }                                                                                       \
    } while (0)

// Each macro expects the library's header to be included where it is used.
#define CUDA_CHECK(call)                                                         \
    GPURELAY_CHECK_IMPL("CUDA", gpurelay_status_ == cudaSuccess,                 \
                        std::string(cudaGetErrorName(gpurelay_status_)) + ": " + \
                            cudaGetErrorString(gpurelay_status_),                \
                        call)
#define NCCL_CHECK(call)                                                           \
    GPURELAY_CHECK_IMPL("NCCL", gpurelay_status_ == ncclSuccess,                   \
                        std::string(ncclGetErrorString(gpurelay_status_)) + " (" + \
                            ncclGetLastError(nullptr) + ")",                       \
                        call)
