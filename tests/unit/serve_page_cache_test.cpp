// `vitattn serve`'s report cache (serve/page_cache.hpp): least recently used out within a byte
// budget, a page larger than the whole budget not kept, and found pages outliving eviction.
// Plus the report query's own parameters (serve/map_query.hpp: name, not format) and the name
// its download is saved under (serve/download_name.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "serve/download_name.hpp"
#include "serve/map_query.hpp"
#include "serve/page_cache.hpp"

namespace vitattn::serve {
namespace {

// A page whose cost (id + name + html) is exactly `cost` bytes under a 2-byte id.
std::shared_ptr<const CachedPage> page_of(std::size_t cost, char fill = 'x') {
  return std::make_shared<const CachedPage>(CachedPage{"n", std::string(cost - 3, fill)});
}

TEST(PageCache, LeastRecentlyUsedGoesFirstWithinTheBudget) {
  PageCache cache(100);
  ASSERT_TRUE(cache.put("aa", page_of(40)));
  ASSERT_TRUE(cache.put("bb", page_of(40)));
  EXPECT_EQ(cache.bytes(), 80u);
  ASSERT_NE(cache.find("aa"), nullptr);  // aa is now the most recently used: bb goes first
  ASSERT_TRUE(cache.put("cc", page_of(40)));
  EXPECT_EQ(cache.find("bb"), nullptr);
  EXPECT_NE(cache.find("aa"), nullptr);
  EXPECT_NE(cache.find("cc"), nullptr);
  EXPECT_EQ(cache.bytes(), 80u);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(PageCache, AsManyGoAsTheNewPageNeeds) {
  PageCache cache(100);
  for (const char* id : {"aa", "bb", "cc", "dd"}) ASSERT_TRUE(cache.put(id, page_of(25)));
  EXPECT_EQ(cache.bytes(), 100u);  // exactly the budget: nothing went
  ASSERT_TRUE(cache.put("ee", page_of(60)));  // needs 85 bytes freed of 100: aa, bb, cc go
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find("cc"), nullptr);
  EXPECT_NE(cache.find("dd"), nullptr);
  EXPECT_EQ(cache.bytes(), 85u);
}

TEST(PageCache, APageLargerThanTheWholeBudgetIsNotKeptAndEvictsNothing) {
  PageCache cache(100);
  ASSERT_TRUE(cache.put("aa", page_of(50)));
  EXPECT_FALSE(cache.put("bb", page_of(101)));
  EXPECT_EQ(cache.find("bb"), nullptr);
  EXPECT_NE(cache.find("aa"), nullptr);
  EXPECT_EQ(cache.bytes(), 50u);
  EXPECT_TRUE(cache.put("cc", page_of(100)));  // exactly the budget: kept, the rest out
  EXPECT_EQ(cache.size(), 1u);
}

TEST(PageCache, PuttingTheSameIdAgainReplacesItsBytes) {
  PageCache cache(100);
  ASSERT_TRUE(cache.put("aa", page_of(60, 'x')));
  ASSERT_TRUE(cache.put("aa", page_of(70, 'y')));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), 70u);
  EXPECT_EQ(cache.find("aa")->html[0], 'y');
}

TEST(PageCache, AFoundPageOutlivesItsEviction) {
  PageCache cache(50);
  ASSERT_TRUE(cache.put("aa", page_of(40, 'a')));
  const auto held = cache.find("aa");
  ASSERT_TRUE(cache.put("bb", page_of(40, 'b')));
  EXPECT_EQ(cache.find("aa"), nullptr);
  EXPECT_EQ(held->html, std::string(37, 'a'));  // still whole for the answer being sent
}

TEST(PageCache, ThreadsSeeTheirOwnPagesAndTheBudgetHolds) {
  PageCache cache(4000);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string id = std::to_string(t) + "-" + std::to_string(i % 50);
        const auto page = std::make_shared<const CachedPage>(CachedPage{id, std::string(100, static_cast<char>('a' + t))});
        cache.put(id, page);
        if (const auto found = cache.find(id); found && found->name != id) ++wrong;
        if (cache.bytes() > cache.budget()) ++wrong;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.bytes(), 4000u);
}

TEST(ReportQuery, TakesANameAndNoFormat) {
  const MapQuery q = parse_map_query({{"name", "cat photo.jpg"}, {"layer", "1"}}, QueryKind::report);
  EXPECT_EQ(q.name, "cat photo.jpg");
  EXPECT_EQ(q.layer, 1);
  EXPECT_THROW(parse_map_query({{"format", "png"}}, QueryKind::report), Error);
  EXPECT_THROW(parse_map_query({{"name", "x.png"}}, QueryKind::map), Error);
  for (const char* bad : {"", "../x.png", "a\\b", "a\nb", "a\x7f"})
    EXPECT_THROW(parse_map_query({{"name", bad}}, QueryKind::report), Error) << bad;
  EXPECT_THROW(parse_map_query({{"name", std::string(256, 'a')}}, QueryKind::report), Error);
}

TEST(ReportQuery, TakesTopAndPcaWhichAMapDoesNot) {
  const MapQuery q = parse_map_query({{"top", "10"}, {"pca", "1"}}, QueryKind::report);
  EXPECT_EQ(q.top, 10);
  EXPECT_TRUE(q.pca);
  const MapQuery defaults = parse_map_query({}, QueryKind::report);
  EXPECT_FALSE(defaults.top);
  EXPECT_FALSE(defaults.pca);
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"top", "0"}, {"top", "-1"}, {"top", "all"}, {"pca", "2"}, {"pca", "yes"}}) {
    try {
      parse_map_query({{name, value}}, QueryKind::report);
      ADD_FAILURE() << name << "=" << value << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(name, 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(parse_map_query({{"top", "3"}}, QueryKind::map), Error);
  EXPECT_THROW(parse_map_query({{"pca", "1"}}, QueryKind::map), Error);
}

TEST(ReportQuery, TheKeyTellsApartEveryFieldThatChangesThePage) {
  const std::multimap<std::string, std::string> base{{"name", "a.png"}};
  const std::string key = report_key(parse_map_query(base, QueryKind::report));
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"model", "1"}, {"layer", "0"}, {"head", "2"}, {"head", "max"}, {"method", "rollout"}, {"class", "3"},
           {"top", "5"}, {"pca", "1"}, {"text", "a cat"}, {"truncate", "1"}}) {
    auto params = base;
    params.emplace(name, value);
    EXPECT_NE(report_key(parse_map_query(params, QueryKind::report)), key) << name << "=" << value;
  }
  // Two heads by index: the same choice, another head (the index is part of the key).
  EXPECT_NE(report_key(parse_map_query({{"name", "a.png"}, {"head", "0"}}, QueryKind::report)),
            report_key(parse_map_query({{"name", "a.png"}, {"head", "1"}}, QueryKind::report)));
  EXPECT_NE(report_key(parse_map_query({{"name", "b.png"}}, QueryKind::report)), key);
  EXPECT_EQ(report_key(parse_map_query({{"name", "a.png"}, {"token", "t"}}, QueryKind::report)), key);
  EXPECT_EQ(report_key(parse_map_query({{"name", "a.png"}, {"top", "3"}}, QueryKind::report)), key);  // the default
  // Prompts: two lines are not one line holding both, and with texts no top lists every text, not 3.
  EXPECT_NE(report_key(parse_map_query({{"name", "a.png"}, {"text", "a\nb"}}, QueryKind::report)),
            report_key(parse_map_query({{"name", "a.png"}, {"text", "a b"}}, QueryKind::report)));
  EXPECT_NE(report_key(parse_map_query({{"name", "a.png"}, {"text", "a\nb"}}, QueryKind::report)),
            report_key(parse_map_query({{"name", "a.png"}, {"text", "a\nb"}, {"top", "3"}}, QueryKind::report)));
  // With texts, no method is the texts' default: another page than method=attention's.
  EXPECT_NE(report_key(parse_map_query({{"name", "a.png"}, {"text", "a"}}, QueryKind::report)),
            report_key(parse_map_query({{"name", "a.png"}, {"text", "a"}, {"method", "attention"}}, QueryKind::report)));
}

// text=: one prompt per line (CRLF and a final line break as one line's end), empty lines kept
// for the CLI's check to refuse; control bytes, and text= on the map endpoint, refused.
TEST(ReportQuery, TextsAreOnePromptPerLine) {
  using Texts = std::vector<std::string>;
  EXPECT_EQ(parse_map_query({{"text", "a cat\r\na dog\n"}}, QueryKind::report).texts, (Texts{"a cat", "a dog"}));
  EXPECT_EQ(parse_map_query({{"text", "a cat\n\na dog"}}, QueryKind::report).texts, (Texts{"a cat", "", "a dog"}));
  EXPECT_EQ(parse_map_query({{"text", ""}}, QueryKind::report).texts, (Texts{""}));
  EXPECT_TRUE(parse_map_query({{"text", "a\tcat"}, {"truncate", "1"}}, QueryKind::report).truncate);
  EXPECT_THROW(parse_map_query({{"text", "a\x1b[2Jcat"}}, QueryKind::report), Error);
  EXPECT_THROW(parse_map_query({{"text", std::string(64 * 1024 + 1, 'a')}}, QueryKind::report), Error);
  EXPECT_THROW(parse_map_query({{"text", "a cat"}}, QueryKind::map), Error);
  EXPECT_THROW(parse_map_query({{"truncate", "2"}}, QueryKind::report), Error);
}

// The download's header, whole: the UTF-8 name percent-encoded in filename* (RFC 5987), an
// ASCII one in filename= (letters without their marks, anything else one '_'). The expected
// encodings are Python's urllib.parse.quote(name, safe="!#$&+-.^_`|~"), written out.
TEST(ReportDownload, UnicodeNamesKeepTheirNameAndGetAnAsciiOne) {
  EXPECT_EQ(report_disposition("chelsea.png"),
            "attachment; filename=\"chelsea_report.html\"; filename*=UTF-8''chelsea_report.html");
  EXPECT_EQ(report_disposition("\u00fcn\u00ef c\u00f8d\u00e9.png"),  // ünï cødé.png
            "attachment; filename=\"uni_code_report.html\"; filename*=UTF-8''%C3%BCn%C3%AF%20c%C3%B8d%C3%A9_report.html");
  EXPECT_EQ(report_disposition("\u00df \u0152 \u0142 \u00d7.jpg"),  // ß Œ ł ×: two letters, one, none
            "attachment; filename=\"ss_OE_l___report.html\"; filename*=UTF-8''%C3%9F%20%C5%92%20%C5%82%20%C3%97_report.html");
  EXPECT_EQ(report_disposition("\u732b.jpg"),  // 猫: no ASCII letter for it
            "attachment; filename=\"__report.html\"; filename*=UTF-8''%E7%8C%AB_report.html");
  EXPECT_EQ(report_disposition("u\u0308ber.png"),  // über in NFD: the mark is dropped, not a '_'
            "attachment; filename=\"uber_report.html\"; filename*=UTF-8''u%CC%88ber_report.html");
  EXPECT_EQ(report_disposition("a\"b;c%d.png"),  // what would end the quoted name or the parameter
            "attachment; filename=\"a_b_c_d_report.html\"; filename*=UTF-8''a%22b%3Bc%25d_report.html");
  EXPECT_EQ(report_disposition("a!#$&+^`|~b.png"),  // RFC 5987's attr-chars stay as they are
            "attachment; filename=\"a_________b_report.html\"; filename*=UTF-8''a!#$&+^`|~b_report.html");
  EXPECT_EQ(report_disposition(".hidden"), "attachment; filename=\".hidden_report.html\"; filename*=UTF-8''.hidden_report.html");
}

TEST(ReportDownload, NoSeparatorControlOrBrokenUtf8InEitherName) {
  // Not UTF-8 (a lone 0xFF, a lead byte cut short, an overlong '/', a surrogate): '_' per byte.
  EXPECT_EQ(report_file_name("\xFF\xC3x.png"), "__x_report.html");
  EXPECT_EQ(report_file_name("\xC0\xAF.png"), "___report.html");
  EXPECT_EQ(report_file_name("\xED\xA0\x80.png"), "____report.html");
  // Control characters (C0, DEL, C1), separators and a right-to-left override.
  EXPECT_EQ(report_file_name("a\tb\x7F\u0085c/d\\e\u202Egnp.png"), "a_b__c_d_e_gnp_report.html");
  EXPECT_EQ(report_disposition("a\tb\u202E.png"), "attachment; filename=\"a_b__report.html\"; filename*=UTF-8''a_b__report.html");
  for (const std::string name : {"\xFF\\\"\n.png", "\u00e9/\u202E\x01.png", "x\xC3"}) {
    const std::string header = report_disposition(name);
    for (const char c : header) {
      const auto b = static_cast<unsigned char>(c);
      EXPECT_TRUE(b >= 0x20 && b < 0x7F && c != '\\' && c != '/') << header;  // one line of printable ASCII
    }
    EXPECT_EQ(std::count(header.begin(), header.end(), '"'), 2) << header;
  }
}

}  // namespace
}  // namespace vitattn::serve
