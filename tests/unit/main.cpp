// The unit tests' main: gtest's, plus the CI rule for skips. Outside CI a GTEST_SKIP stays a
// skip (ctest lists it). Under CI (CI set to anything but "", 0, false or no) a skipped test
// fails: it is a check that did not run, and CI must not count it as passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include "files/text.hpp"

namespace {

bool in_ci() {
  const char* v = std::getenv("CI");
  const std::string s = vitattn::files::lower_case(v ? v : "");
  return !(s.empty() || s == "0" || s == "false" || s == "no");
}

// gtest delivers OnTestEnd to the listeners in reverse order, so this one runs before the
// default printer: a failure added here makes the test FAILED, not SKIPPED, in gtest's own
// output and exit status (and ctest's "[  SKIPPED ]" pattern no longer matches).
class SkipFailsUnderCi : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Skipped()) ADD_FAILURE() << "skipped, and under CI a skipped test is a failure";
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (in_ci()) ::testing::UnitTest::GetInstance()->listeners().Append(new SkipFailsUnderCi);
  return RUN_ALL_TESTS();
}
