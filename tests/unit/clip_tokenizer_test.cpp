// CLIP's tokeniser (src/text) on hand-made cases: the marks, the padding, the context limit,
// the byte characters, the cleaning steps. tests/oracle/test_clip_tokenizer.py compares whole
// texts against a Python re-implementation of OpenAI's simple_tokenizer.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "text/clip_merges.hpp"
#include "text/clip_text_clean.hpp"
#include "text/clip_tokenizer.hpp"
#include "text/clip_word_split.hpp"
#include "text/html_unescape.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::text {
namespace {

const ClipTokenizer& tokenizer() {
  static const ClipTokenizer t;
  return t;
}

std::string repeated(const std::string& word, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + word;
  return s;
}

std::vector<std::string> words_of(std::u32string_view text) {
  std::vector<std::string> out;
  for (auto w : clip_words(text)) out.push_back(encode_utf8(w));
  return out;
}

TEST(ClipTokenizer, VocabularyHasClipsSizeAndMarks) {
  const auto& v = clip_vocabulary();
  EXPECT_EQ(v.id_of.size(), static_cast<size_t>(kClipVocabularySize));
  EXPECT_EQ(v.id_of.at("<|startoftext|>"), 49406);
  EXPECT_EQ(v.id_of.at("<|endoftext|>"), 49407);
  EXPECT_EQ(v.merges.size(), static_cast<size_t>(kClipMerges));
  // The file's first merge ("i n", line 1) is id 512, rank 0.
  EXPECT_EQ(v.id_of.at("in"), 512);
  EXPECT_EQ(v.merges.at(pair_key(v.id_of.at("i"), v.id_of.at("n"))).rank, 0);
}

TEST(ClipTokenizer, ByteCharactersAreBytesToUnicodes) {
  const auto c = clip_byte_characters();
  EXPECT_EQ(c['!'], U'!');
  EXPECT_EQ(c['~'], U'~');
  EXPECT_EQ(c[0], 0x100u);     // the 33 bytes 0…32 come first, from U+0100
  EXPECT_EQ(c[' '], 0x120u);   // 'Ġ'
  EXPECT_EQ(c[0x7F], 0x121u);  // then 127…160
  EXPECT_EQ(c[0xAD], 0x143u);  // the soft hyphen is the last
  EXPECT_EQ(c[0xFF], 0xFFu);
}

TEST(ClipTokenizer, SingleCharactersAreTheirEndOfWordForm) {
  // '!' is the first byte character (id 0), 'a' the 65th: a one-character word is id + 256.
  EXPECT_EQ(tokenizer().encode("!"), std::vector<int32_t>({256}));
  EXPECT_EQ(tokenizer().encode("a"), std::vector<int32_t>({320}));
  EXPECT_EQ(tokenizer().encode("A"), std::vector<int32_t>({320}));  // lower-cased
}

TEST(ClipTokenizer, ReadmeExample) {
  // CLIP's README: clip.tokenize(["a diagram", "a dog", "a cat"]).
  EXPECT_EQ(tokenizer().encode("a diagram"), std::vector<int32_t>({320, 22697}));
  EXPECT_EQ(tokenizer().encode("a dog"), std::vector<int32_t>({320, 1929}));
  EXPECT_EQ(tokenizer().encode("a cat"), std::vector<int32_t>({320, 2368}));
}

TEST(ClipTokenizer, MarksInTheTextAreTheirIds) {
  EXPECT_EQ(tokenizer().encode("<|startoftext|>"), std::vector<int32_t>({kClipStartOfText}));
  EXPECT_EQ(tokenizer().encode("a<|endoftext|>"), std::vector<int32_t>({320, kClipEndOfText}));
}

// token_text is simple_tokenizer.py's decode of one id: the word end "</w>" a trailing space.
TEST(ClipTokenizer, TokenTextIsTheDecodedSymbolWithTheWordEndASpace) {
  EXPECT_EQ(tokenizer().token_text(320), "a ");
  EXPECT_EQ(tokenizer().token_text(22697), "diagram ");
  EXPECT_EQ(tokenizer().token_text(0), "!");  // a byte character without the word end
  EXPECT_EQ(tokenizer().token_text(kClipStartOfText), "<|startoftext|>");
  EXPECT_EQ(tokenizer().token_text(kClipEndOfText), "<|endoftext|>");
}

TEST(ClipTokenizer, TokenTextsJoinedReadAsTheCleanedText) {
  for (const std::string text : {"a diagram", "A Photo of Zürich, at night!", "tonight's ½ café"}) {
    std::string joined;
    for (const int32_t id : tokenizer().encode(text)) joined += tokenizer().token_text(id);
    std::string words;
    for (const std::string& w : words_of(clip_clean(decode_utf8(text, "text")))) words += w + " ";
    EXPECT_EQ(joined, words) << text;
  }
}

TEST(ClipTokenizer, TokenTextOfPartOfACharacterIsTheReplacementCharacter) {
  // Bytes 0xE7 and 0xC3 alone lead a sequence they do not finish: Python's errors="replace".
  const ClipVocabulary& v = clip_vocabulary();
  EXPECT_EQ(tokenizer().token_text(v.byte_id[0xE7]), "\xEF\xBF\xBD");
  EXPECT_EQ(tokenizer().token_text(v.byte_id[0xC3] + 256), "\xEF\xBF\xBD ");
  EXPECT_EQ(tokenizer().token_text(v.byte_id[0x80]), "\xEF\xBF\xBD");  // a continuation byte alone
}

TEST(ClipTokenizer, TokenTextsOfACharacterSplitOverTokensAreReplacementCharacters) {
  // "猫" is three byte tokens, each part of the character alone (as Python decodes each id).
  std::string joined;
  for (const int32_t id : tokenizer().encode("猫")) joined += tokenizer().token_text(id);
  EXPECT_EQ(joined, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD ");
}

TEST(ClipTokenizer, TokenTextOfAnIdOutsideTheVocabularyIsAnError) {
  EXPECT_THROW(tokenizer().token_text(-1), Error);
  EXPECT_THROW(tokenizer().token_text(kClipVocabularySize), Error);
}

TEST(ClipTokenizer, TokenizeAddsMarksAndPads) {
  const auto ids = tokenizer().tokenize("");
  ASSERT_EQ(ids.size(), 77u);
  EXPECT_EQ(ids[0], kClipStartOfText);
  EXPECT_EQ(ids[1], kClipEndOfText);
  for (size_t i = 2; i < ids.size(); ++i) EXPECT_EQ(ids[i], 0) << i;
  const auto cat = tokenizer().tokenize("a cat", 5);
  EXPECT_EQ(cat, std::vector<int32_t>({kClipStartOfText, 320, 2368, kClipEndOfText, 0}));
}

TEST(ClipTokenizer, ExactlyTheContextFits) {
  const auto ids = tokenizer().tokenize(repeated("a", 75));
  ASSERT_EQ(ids.size(), 77u);
  EXPECT_EQ(ids[75], 320);
  EXPECT_EQ(ids[76], kClipEndOfText);
}

TEST(ClipTokenizer, TooLongIsAnErrorNamingTheTextAndCount) {
  try {
    tokenizer().tokenize(repeated("a", 76));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("text \"" + repeated("a", 20) + " …\":"), std::string::npos) << what;  // its first 40 characters
    EXPECT_NE(what.find("78 tokens"), std::string::npos) << what;
    EXPECT_NE(what.find("77"), std::string::npos) << what;
  }
}

TEST(ClipTokenizer, TooLongErrorIsOneLineWhateverTheText) {
  try {
    tokenizer().tokenize("line one\nline two\r" + repeated("a", 76));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find_first_of("\n\r"), std::string::npos) << what;
    EXPECT_NE(what.find("text \"line one\\x0Aline two\\x0D"), std::string::npos) << what;
  }
}

TEST(ClipTokenizer, TruncateEndsWithTheEndMark) {
  const auto ids = tokenizer().tokenize(repeated("a", 76), 77, true);
  ASSERT_EQ(ids.size(), 77u);
  EXPECT_EQ(ids[0], kClipStartOfText);
  for (size_t i = 1; i < 76; ++i) EXPECT_EQ(ids[i], 320) << i;
  EXPECT_EQ(ids[76], kClipEndOfText);
}

TEST(ClipTokenizer, ContextBelowTwoIsAnError) { EXPECT_THROW(tokenizer().tokenize("a", 1), Error); }

TEST(ClipTokenizer, InvalidUtf8IsAnError) {
  try {
    tokenizer().encode("caf\xC3");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte 3"), std::string::npos) << e.what();
  }
}

TEST(ClipTokenizer, CleaningUnescapesTwiceCollapsesAndLowers) {
  EXPECT_EQ(encode_utf8(clip_clean(U"  A&amp;lt;B \t\n C  ")), "a<b c");
  EXPECT_EQ(encode_utf8(clip_clean(U"\x1c" U"x\x1c" U"y\x1c")), "x\x1cy");  // strip is str.isspace's
  EXPECT_EQ(encode_utf8(clip_clean(U"ΟΔΟΣ ΣΑ")), "οδος σα");               // final sigma
  EXPECT_EQ(encode_utf8(clip_clean(U"İ")), "i\u0307");
}

TEST(ClipTokenizer, HtmlUnescapeAsPython) {
  EXPECT_EQ(encode_utf8(html_unescape(U"&#65;&#x42&#X43;&#128;&#0;&#1;&#99999999999;")), "ABC€\uFFFD\uFFFD");
  EXPECT_EQ(encode_utf8(html_unescape(U"&amp &ampx; &apos &apos; &copy; &# &;")), "& &x; &apos ' &copy; &# &;");
}

TEST(ClipTokenizer, WordSplitAsThePattern) {
  EXPECT_EQ(words_of(U"don't stop"), std::vector<std::string>({"don", "'t", "stop"}));
  EXPECT_EQ(words_of(U"''s 42!?"), std::vector<std::string>({"''", "s", "4", "2", "!?"}));
  EXPECT_EQ(words_of(U"x<|endoftext|>"), std::vector<std::string>({"x", "<|endoftext|>"}));
  EXPECT_EQ(words_of(U"!<|endoftext|>"), std::vector<std::string>({"!<|", "endoftext", "|>"}));
  EXPECT_EQ(words_of(U"東京タワー café"), std::vector<std::string>({"東京タワー", "café"}));
}

// A long-lived tokeniser fed new words without end (a server's) keeps at most kCachedWords of
// them, and a word's ids do not depend on whether they were cached.
TEST(ClipTokenizer, WordCacheIsBoundedAndDoesNotChangeIds) {
  const ClipTokenizer t;
  const std::vector<int32_t> first = t.encode("zebra crossing");
  std::string text;
  for (std::size_t i = 0; i < ClipTokenizer::kCachedWords + 100; ++i) {
    std::string word;  // letters only: digits would split into one word each
    for (std::size_t n = i; word.empty() || n > 0; n /= 26) word += static_cast<char>('a' + n % 26);
    text += word + ' ';
  }
  (void)t.encode(text);
  EXPECT_LE(t.cached_words(), ClipTokenizer::kCachedWords);
  EXPECT_GT(t.cached_words(), 0u);
  EXPECT_EQ(t.encode("zebra crossing"), first);
}

}  // namespace
}  // namespace vitattn::text
