// Zero-shot class lists (src/text/class_prompts.hpp) on hand-made files: line endings, blank
// lines, the byte-order mark, the errors' file and line, the template formatting.
// tests/oracle/test_clip_zeroshot.py checks the ensemble built on them against torch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "text/class_prompts.hpp"

namespace vitattn::text {
namespace {

std::string error_of(void (*f)()) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ClassPrompts, LinesSkipEmptyOnesAndKeepTheirNumbers) {
  const TextLines l = parse_labels("\xEF\xBB\xBF" "cat\r\n\r\ncaf\xC3\xA9 au lait\n\ngolden retriever", "l.txt");
  EXPECT_EQ(l.entries, (std::vector<std::string>{"cat", "caf\xC3\xA9 au lait", "golden retriever"}));
  EXPECT_EQ(l.lines, (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(l.where(2), "l.txt line 5");
  EXPECT_EQ(parse_labels("a\nb\n", "x").entries.size(), 2u);  // the trailing newline ends the last line
}

TEST(ClassPrompts, ErrorsNameTheFileAndTheLine) {
  EXPECT_EQ(error_of([] { parse_labels("cat\n \t\ndog\n", "l.txt"); }), "l.txt line 2: an empty label (white space only)");
  EXPECT_NE(error_of([] { parse_labels("cat\n\xFF\n", "l.txt"); }).find("l.txt line 2: not valid UTF-8"), std::string::npos);
  EXPECT_EQ(error_of([] { parse_labels("\n\r\n", "l.txt"); }), "l.txt: no label (one class name a line)");
  EXPECT_EQ(error_of([] { parse_templates("a {}.\n\na photo\n", "t.txt"); }),
            "t.txt line 3: a template without {} (where the class name goes)");
}

TEST(ClassPrompts, TemplatesAreFormattedAsPythonFormatsThem) {
  EXPECT_EQ(format_prompt("a photo of a {}.", "cat"), "a photo of a cat.");
  EXPECT_EQ(format_prompt("{} and {}", "x"), "x and x");
  EXPECT_EQ(format_prompt("a {}", "{}"), "a {}");  // the name is inserted, never formatted again
  const TextLines labels = parse_labels("cat\ndog\n", "l");
  EXPECT_EQ(class_prompts(labels, parse_templates("a {}.\n{}!\n", "t")),
            (std::vector<std::vector<std::string>>{{"a cat.", "cat!"}, {"a dog.", "dog!"}}));
  EXPECT_EQ(class_prompts(labels, TextLines{}), (std::vector<std::vector<std::string>>{{"cat"}, {"dog"}}));
}

TEST(ClassPrompts, TheBuiltInListsAreTheNotebooks) {
  const TextLines names = imagenet_class_names(), templates = clip_imagenet_templates();
  ASSERT_EQ(names.entries.size(), 1000u);
  ASSERT_EQ(templates.entries.size(), 80u);
  EXPECT_EQ(names.entries.front(), "tench");
  EXPECT_EQ(names.entries.back(), "toilet paper");
  EXPECT_EQ(templates.entries.front(), "a bad photo of a {}.");
  EXPECT_EQ(templates.entries.back(), "a tattoo of the {}.");
}

}  // namespace
}  // namespace vitattn::text
