// An error no caller can catch, raised before main installs its handler (a wait that the
// watchdog bounds while the MPI session is made): one line on stderr, and the process ends with
// the error's code.
#include "runtime/error.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpurelay {
namespace {

TEST(FailFatally, WithoutAHandlerOneLineAndTheCode) {
    ASSERT_EQ(fatal_handler(), nullptr);
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(
                    timeout_error("finding the ranks of this node",
                                  std::chrono::milliseconds(300000)))),
                testing::ExitedWithCode(4),
                "^gpurelay: finding the ranks of this node did not finish within 300 s "
                "\\(timeout_s\\)");
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(usage_error("bad deck"))),
                testing::ExitedWithCode(2), "^gpurelay: bad deck\n$");
    EXPECT_EXIT(fail_fatally(std::make_exception_ptr(std::logic_error("odd"))),
                testing::ExitedWithCode(4), "^gpurelay: odd\n$");
}

}  // namespace
}  // namespace gpurelay
