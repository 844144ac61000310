// Manifests of inputs (io/file_list.hpp): one path per line or NUL-separated.
#include "files/file_list.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn::files {
namespace {
namespace fs = std::filesystem;
using namespace std::string_literals;

std::vector<std::string> strings(const std::vector<fs::path>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(p.string());
  return out;
}

TEST(FileList, OnePathPerLineBlankLinesSkippedSpacesKept) {
  const std::string text = "a.jpg\n\nsub/b c.png\r\n  lead.jpg\n/abs/x.jpg\n\r\nlast.jpg";
  EXPECT_EQ(strings(parse_file_list(text, false, "list")),
            (std::vector<std::string>{"a.jpg", "sub/b c.png", "  lead.jpg", "/abs/x.jpg", "last.jpg"}));
  EXPECT_TRUE(parse_file_list("", false, "list").empty());
  EXPECT_TRUE(parse_file_list("\n\n", false, "list").empty());
}

TEST(FileList, NulSeparatedKeepsNewlinesInNames) {
  const std::string text = "a.jpg\0odd\nname.png\0\0x\r.jpg\0"s;
  EXPECT_EQ(strings(parse_file_list(text, true, "list")), (std::vector<std::string>{"a.jpg", "odd\nname.png", "x\r.jpg"}));
  // A list written by hand (printf 'a\0b') may end without its last NUL: that entry counts too.
  EXPECT_EQ(strings(parse_file_list("a.jpg\0last.png"s, true, "list")), (std::vector<std::string>{"a.jpg", "last.png"}));
  EXPECT_EQ(strings(parse_file_list("only.png"s, true, "list")), (std::vector<std::string>{"only.png"}));
}

TEST(FileList, NulInALineListIsAnErrorWithItsLine) {
  try {
    parse_file_list("a.jpg\nb.jpg\0c.jpg\n"s, false, "files.txt");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "files.txt: line 2 holds a NUL byte: the list looks NUL-separated");
  }
}

TEST(FileList, ReadsAFileAndNamesAMissingOne) {
  test::TempDir d;
  std::ofstream(d / "list.txt") << "x.jpg\ny.jpg\n";
  EXPECT_EQ(strings(read_file_list((d / "list.txt").string(), false)), (std::vector<std::string>{"x.jpg", "y.jpg"}));
  try {
    read_file_list((d / "missing.txt").string(), false);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt: cannot read the file list: No such file"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_file_list(d.path().string(), false), Error) << "a folder is not a list";
}

}  // namespace
}  // namespace vitattn::files
