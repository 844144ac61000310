// The unit tests' main: gtest's, plus the CI rule for skips. Outside CI a GTEST_SKIP is
// reported to ctest as skipped (the marker line below is the test's SKIP_REGULAR_EXPRESSION);
// under CI (CI set to anything but "", 0, false or no) a skip is a failure: it means a
// check that did not run, and CI must not count it as passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

bool in_ci() {
  const char* v = std::getenv("CI");
  std::string s = v ? v : "";
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(s.empty() || s == "0" || s == "false" || s == "no");
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  const int skipped = ::testing::UnitTest::GetInstance()->skipped_test_count();
  if (skipped == 0) return status;
  if (in_ci()) {
    std::printf("FAIL: %d test(s) skipped, and under CI a skip is a failure\n", skipped);
    return 1;
  }
  std::printf("vitattn-unit-tests: skipped outside CI\n");
  return status;
}
