// report/html_page: the base64 encoder (OpenSSL's EVP_EncodeBlock) against RFC 4648's test
// vectors (section 10), the escaping the report pages rely on, and the generator mark that
// lets vitattn replace its own pages only (files/file_kind).
#include "report/html_page.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "files/file_kind.hpp"

namespace vitattn::report {
namespace {

std::string b64(const std::string& s) { return base64(s.data(), s.size()); }

TEST(Base64, Rfc4648TestVectors) {
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
}

TEST(Base64, EveryByteValueAndTheLastTwoLetters) {
  // 0xfb 0xff → "+/8=": the alphabet's 62nd and 63rd letters; high bytes are not sign-extended.
  const std::vector<std::uint8_t> high{0xfb, 0xff};
  EXPECT_EQ(base64(high.data(), high.size()), "+/8=");
  std::vector<std::uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  const std::string out = base64(all.data(), all.size());
  ASSERT_EQ(out.size(), 344u);  // ⌈256/3⌉·4
  EXPECT_EQ(out.substr(0, 8), "AAECAwQF");
  EXPECT_EQ(out.substr(out.size() - 8), "/P3+/w==");
}

TEST(Base64, LongInputsJoinAcrossPieces) {
  // base64() hands EVP_EncodeBlock (an int count) 48 MiB pieces: zeros encode to "AAAA" per
  // 3 bytes, so one byte past the first piece must add exactly "AA==", with nothing between.
  const std::size_t piece = std::size_t{3} << 24;
  const std::vector<std::uint8_t> zeros(piece + 1, 0);
  const std::string out = base64(zeros.data(), zeros.size());
  ASSERT_EQ(out.size(), piece / 3 * 4 + 4);
  EXPECT_EQ(out.find_first_not_of('A'), piece / 3 * 4 + 2);
  EXPECT_EQ(out.substr(out.size() - 4), "AA==");
}

TEST(HtmlPage, EscapesTextAndScriptEnds) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(script_safe_json(R"({"name":"</script><b>"})"), R"({"name":"\u003c/script>\u003cb>"})");
}

bool is_page(const std::string& text) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  return files::is_kind(files::FileKind::vitattn_page, {bytes, text.size()}, text.size());
}

TEST(HtmlPage, EveryRenderedPageCarriesTheGeneratorMark) {
  const PageTemplate page{"<!DOCTYPE html>\n<html><head>\n{{GENERATOR}}\n<title>{{T}}</title></head></html>", "", "",
                          "", ""};
  const std::string html = render_page(page, {{"T", "x"}});
  EXPECT_NE(html.find(files::page_generator_tag()), std::string::npos) << html;
  EXPECT_EQ(files::page_generator_tag().rfind("<meta name=\"generator\" content=\"vitattn ", 0), 0u) << files::page_generator_tag();
  EXPECT_TRUE(is_page(html));
  // A template that would write a page vitattn could never replace is refused.
  EXPECT_THROW(render_page({"<!DOCTYPE html><title>{{T}}</title>", "", "", "", ""}, {{"T", "x"}}), Error);
}

TEST(HtmlPage, OnlyAPageWithTheMarkNearItsStartIsVitattns) {
  const std::string mark = files::page_generator_tag();
  EXPECT_TRUE(is_page("<!DOCTYPE html><head>" + mark));
  EXPECT_TRUE(is_page("\xef\xbb\xbf\n  <!doctype HTML><head>" + mark));  // BOM, white space, any case
  EXPECT_FALSE(is_page("<html>my notes</html>"));
  EXPECT_FALSE(is_page("<!DOCTYPE html><p>mine</p>"));
  EXPECT_FALSE(is_page(mark));                                              // not an HTML page
  EXPECT_FALSE(is_page("<!DOCTYPE html>" + std::string(files::kPageMarkWithin, ' ') + mark));  // past the head read
  const std::string notes = "<html>my notes</html>";
  EXPECT_EQ(files::describe_kind({reinterpret_cast<const std::uint8_t*>(notes.data()), notes.size()}, notes.size()),
            "an HTML page");
  // Another generator's page.
  EXPECT_FALSE(is_page("<!DOCTYPE html><meta name=\"generator\" content=\"Hugo 0.1\">"));
}

}  // namespace
}  // namespace vitattn::report
