// SigLIP's text steps before SentencePiece (text/siglip_tokenizer.hpp) on hand-made strings,
// each expectation worked out from HF's SiglipTokenizer code (Python's str.lower per
// character, string.punctuation, str.isspace); and the tokeniser's file errors. The ids
// themselves are compared with SentencePiece's Python encoder in
// tests/oracle/test_siglip_tokenizer.py (no spiece.model here).
#include "text/siglip_tokenizer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn::text {
namespace {

TEST(SiglipText, CanonicalizeRemovesEveryAsciiPunctuationMark) {
  EXPECT_EQ(canonicalize_text("a photo of a cat."), "a photo of a cat");
  EXPECT_EQ(canonicalize_text("don't, x-ray: (50%) \"ok\"!"), "dont xray 50 ok");
  EXPECT_EQ(canonicalize_text("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "");
  EXPECT_EQ(canonicalize_text("a</s>b"), "asb");  // a special piece's string is plain text
}

TEST(SiglipText, CanonicalizeCollapsesPythonWhitespaceAndStrips) {
  EXPECT_EQ(canonicalize_text("  a \t\n b\r\n"), "a b");
  // U+00A0, U+3000, U+2028, U+0085 and U+001F are whitespace to Python's \s and strip().
  EXPECT_EQ(canonicalize_text("\xC2\xA0" "a\xE3\x80\x80" "b\xE2\x80\xA8" "c\xC2\x85" "d\x1F"), "a b c d");
  // U+200B (zero width space) is not.
  EXPECT_EQ(canonicalize_text("a\xE2\x80\x8B" "b"), "a\xE2\x80\x8B" "b");
  // Punctuation goes first, so "a , b" has one space left, not two.
  EXPECT_EQ(canonicalize_text("a , b"), "a b");
  EXPECT_EQ(canonicalize_text(""), "");
  EXPECT_EQ(canonicalize_text(" \t "), "");
}

TEST(SiglipText, CanonicalizeKeepsNonAsciiPunctuation) {
  EXPECT_EQ(canonicalize_text("\xC2\xBFqu\xC3\xA9?"), "\xC2\xBFqu\xC3\xA9");  // "¿qué?": only "?" is ASCII
}

TEST(SiglipText, LowerCaseIsPythonsPerCharacter) {
  EXPECT_EQ(lower_case_text("A Photo OF"), "a photo of");
  EXPECT_EQ(lower_case_text("\xC3\x89T\xC3\x89"), "\xC3\xA9t\xC3\xA9");                // ÉTÉ → été
  EXPECT_EQ(lower_case_text("\xCE\xA3\xCE\x9F\xCE\xA3"), "\xCF\x83\xCE\xBF\xCF\x83");  // ΣΟΣ → σοσ, no final ς
  EXPECT_EQ(lower_case_text("\xC4\xB0"), "i\xCC\x87");                                 // İ → i + U+0307
  EXPECT_EQ(lower_case_text("\xE2\x96\x81" "7\xF0\x9F\x98\x80"), "\xE2\x96\x81" "7\xF0\x9F\x98\x80");
}

TEST(SiglipText, NormalizedTextStartsWithTheUnderlineAndReplacesOthers) {
  EXPECT_EQ(siglip_normalized_text("A Cat."), "\xE2\x96\x81" "a cat");
  // A leading space stays one space after the "▁" (HF strips around the whole, "▁" included).
  EXPECT_EQ(siglip_normalized_text("  Hello,   World! "), "\xE2\x96\x81 hello world");
  EXPECT_EQ(siglip_normalized_text("a\xE2\x96\x81" "b"), "\xE2\x96\x81" "a b");
  EXPECT_EQ(siglip_normalized_text(""), "\xE2\x96\x81");
}

TEST(SiglipText, NotUtf8IsAnError) {
  EXPECT_THROW(canonicalize_text("a\xFF"), Error);
  EXPECT_THROW(canonicalize_text("\xC0\xAF"), Error);      // overlong "/"
  EXPECT_THROW(lower_case_text("\xED\xA0\x80"), Error);    // a surrogate
  EXPECT_THROW(canonicalize_text("\xE2\x96"), Error);      // cut short
}

TEST(SiglipTokenizerFile, MissingModelIsOneLineNamingIt) {
  const test::TempDir dir;
  const std::filesystem::path missing = dir / "spiece.model";
  try {
    SiglipTokenizer tokenizer(missing);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind(missing.string() + ": ", 0), 0u) << what;
  }
}

TEST(SiglipTokenizerFile, NotAModelIsOneLineNamingIt) {
  const test::TempDir dir;
  const std::filesystem::path junk = dir / "spiece.model";
  std::ofstream(junk) << "this is not a protobuf\n";
  try {
    SiglipTokenizer tokenizer(junk);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind(junk.string() + ": not a SentencePiece model", 0), 0u) << what;
  }
}

}  // namespace
}  // namespace vitattn::text
