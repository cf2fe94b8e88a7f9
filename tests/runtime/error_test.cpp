// An error no caller can catch, raised before main installs its handler (a wait that the
// watchdog bounds while the MPI session is made): one line on stderr, and the process ends with
// the error's code.
#include "runtime/error.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurelay {
namespace {

TEST(FailFatally, WithoutAHandlerOneLineAndTheCode) {
    ASSERT_EQ(fatal_handler(), nullptr);
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(timeout_error(
                    "finding the ranks of this node", std::chrono::milliseconds(300000)))),
                testing::ExitedWithCode(4),
                "^gpurelay: finding the ranks of this node did not finish within 300 s "
                "\\(timeout_s\\)");
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(usage_error("bad deck"))),
                testing::ExitedWithCode(2), "^gpurelay: bad deck\n$");
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(std::logic_error("odd"))),
                testing::ExitedWithCode(4), "^gpurelay: odd\n$");
}

// Eight threads failing at once (a rank's waits running out together): the first ends the
// process, the others wait for it; one line, the first one's code.
TEST(FailFatally, ManyThreadsAtOnceOneLine) {
    const auto many = [] {
        std::atomic<int> ready{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; ++i) {
            threads.emplace_back([i, &ready] {
                const auto error =
                    std::make_exception_ptr(usage_error("wait " + std::to_string(i)));
                ready.fetch_add(1);
                while (ready.load() < 8) {
                }
                fail_fatally(error);
            });
        }
        for (std::thread& t : threads) t.join();
    };
    EXPECT_EXIT(many(), testing::ExitedWithCode(2), "^gpurelay: wait [0-7]\n$");
}

// The end of the process is claimed once: the first claim returns, and a later one, from any
// thread, never does (its thread waits for the process to end). Without that, ManyThreadsAtOnce
// could still pass: the first thread's exit wins its race with the others' lines.
TEST(ClaimProcessEnd, TheFirstClaimReturnsAndEveryLaterOneWaits) {
    const auto claim_twice = [] {
        claim_process_end();
        std::atomic<bool> returned{false};
        std::thread later([&returned] {
            claim_process_end();
            returned = true;
        });
        later.detach();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::fprintf(stderr, returned ? "the later claim returned\n" : "the later claim waits\n");
        std::_Exit(returned ? 1 : 0);
    };
    EXPECT_EXIT(claim_twice(), testing::ExitedWithCode(0), "^the later claim waits\n$");
}

}  // namespace
}  // namespace gpurelay
