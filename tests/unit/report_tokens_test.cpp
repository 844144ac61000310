// report/report_page: the Tokens panel's hand-over. add_tokens refuses diagnostics of another
// shape, add_pca a picture of another size; the written page's data holds the norms and sinks as
// float32 rows (L, T), the flagged tokens, the register share, --clean's count at the drawn layer
// and the PCA bytes as given. (The panel itself is checked in Chromium: test_report_tokens.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/error.hpp"
#include "core/token_diagnostics.hpp"
#include "report/html_page.hpp"
#include "report/report_page.hpp"
#include "test_util.hpp"

namespace vitattn::report {
namespace {

constexpr int kLayers = 2, kHeads = 2, kFirstPatch = 3, kGridH = 2, kGridW = 3, kT = kFirstPatch + kGridH * kGridW;

// heads H × (T, T) softmax rows of random scores.
std::vector<Matrix> random_heads(std::mt19937& rng) {
  std::vector<Matrix> heads;
  for (int h = 0; h < kHeads; ++h) {
    Matrix a = test::random_matrix(kT, kT, rng, 2.0f).array().exp();  // (T, T)
    for (int i = 0; i < kT; ++i) a.row(i) /= a.row(i).sum();
    heads.push_back(a);
  }
  return heads;
}

struct Made {
  ReportShape shape{kLayers, kHeads, kFirstPatch, kGridH, kGridW, 8, kGridW * 8, kGridH * 8, 0, 0};
  std::vector<std::vector<Matrix>> heads;  // [layer] H × (T, T)
  TokenDiagnostics tokens;
};

Made made() {
  std::mt19937 rng(7);
  Made m;
  TokenRecorder recorder({kLayers, kHeads, kFirstPatch, kGridH, kGridW, 8}, 1.1f, 0.6f);
  for (int l = 0; l < kLayers; ++l) {
    m.heads.push_back(random_heads(rng));
    recorder.add_attention(l, m.heads.back());
    recorder.add_block_output(l, test::random_matrix(kT, 5, rng));  // (T, width)
  }
  m.tokens = recorder.finish();
  return m;
}

nlohmann::json page_data(const std::filesystem::path& page) {
  std::stringstream text;
  text << std::ifstream(page).rdbuf();
  const std::string html = text.str(), open = "<script type=\"application/json\" id=\"vitattn-data\">";
  const std::size_t begin = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(begin, html.find("</script>", begin) - begin));
}

std::vector<float> floats(const std::string& b64, std::size_t n) {
  // b64: base64 of n little-endian float32 (RFC 4648 alphabet), decoded here 6 bits at a time.
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<std::uint8_t> bytes;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<std::uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xff));
    }
  }
  EXPECT_EQ(bytes.size(), n * sizeof(float));
  std::vector<float> out(n);
  std::memcpy(out.data(), bytes.data(), std::min(bytes.size(), n * sizeof(float)));
  return out;
}

TEST(ReportTokens, RefusesAnotherShape) {
  Made m = made();
  ReportBuilder report(m.shape, kLayers - 1, {});
  TokenDiagnostics other = m.tokens;
  other.shape.grid_w = kGridW + 1;
  EXPECT_THROW(report.add_tokens(other, 0.6f, std::nullopt), Error);
  other = m.tokens;
  other.flagged.pop_back();
  EXPECT_THROW(report.add_tokens(other, 0.6f, std::nullopt), Error);
  EXPECT_THROW(report.add_pca(std::vector<std::uint8_t>(kGridH * kGridW * 3 - 1)), Error);
  EXPECT_NO_THROW(report.add_pca(std::vector<std::uint8_t>(kGridH * kGridW * 3)));
}

TEST(ReportTokens, ThePageHoldsThem) {
  Made m = made();
  ReportBuilder report(m.shape, kLayers - 1, {});
  for (int l = 0; l < kLayers; ++l) report.add_layer(l, m.heads[static_cast<std::size_t>(l)]);
  report.add_tokens(m.tokens, 0.5f, std::size_t{2});
  std::vector<std::uint8_t> rgb(kGridH * kGridW * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(40 * i + 3);
  report.add_pca(rgb);
  test::TempDir dir;
  const cv::Mat bgr(kGridH * 8, kGridW * 8, CV_8UC3, cv::Scalar(10, 20, 30));
  report.write(dir.path() / "p.html", "p.png", bgr, Matrix::Ones(kGridH, kGridW), "test model");
  const nlohmann::json t = page_data(dir.path() / "p.html")["tokens_panel"];
  ASSERT_TRUE(t.is_object());
  EXPECT_FLOAT_EQ(t["ratio"].get<float>(), 1.1f);
  EXPECT_FLOAT_EQ(t["mask_threshold"].get<float>(), 0.5f);
  const std::vector<float> norms = floats(t["norms"], kLayers * kT), sinks = floats(t["sinks"], kLayers * kT);
  for (int l = 0; l < kLayers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    for (int j = 0; j < kT; ++j) {
      EXPECT_EQ(norms[li * kT + static_cast<std::size_t>(j)], m.tokens.norms(l, j)) << l << ' ' << j;
      // The sinks from the matrices handed to the page: the mean over heads and rows of a column.
      double col = 0;
      for (const Matrix& a : m.heads[li]) col += a.col(j).cast<double>().sum();
      EXPECT_NEAR(sinks[li * kT + static_cast<std::size_t>(j)], col / (kHeads * kT), 1e-6) << l << ' ' << j;
    }
    EXPECT_EQ(t["flagged"][li].get<std::vector<int>>(), m.tokens.flagged[li]);
    EXPECT_FLOAT_EQ(t["median"][li].get<float>(), m.tokens.median_norm(l));
    double share = 0;  // the class token's attention on tokens 1, 2 (the registers), mean over heads
    for (const Matrix& a : m.heads[li]) share += static_cast<double>(a(0, 1)) + static_cast<double>(a(0, 2));
    EXPECT_NEAR(t["register_share"][li].get<double>(), share / kHeads, 1e-6);
    EXPECT_EQ(t["heads"]["entropy"][li].size(), static_cast<std::size_t>(kHeads));
  }
  EXPECT_EQ(t["clean"]["layer"], kLayers - 1);
  EXPECT_EQ(t["clean"]["left_out"], 2);
  EXPECT_EQ(t["pca"], base64(rgb.data(), rgb.size()));
}

TEST(ReportTokens, NoCleanNoPca) {
  Made m = made();
  ReportBuilder report(m.shape, 0, {});
  for (int l = 0; l < kLayers; ++l) report.add_layer(l, m.heads[static_cast<std::size_t>(l)]);
  report.add_tokens(m.tokens, 0.6f, std::nullopt);
  test::TempDir dir;
  const cv::Mat bgr(kGridH * 8, kGridW * 8, CV_8UC3, cv::Scalar(10, 20, 30));
  report.write(dir.path() / "p.html", "p.png", bgr, Matrix::Ones(kGridH, kGridW), "test model");
  const nlohmann::json t = page_data(dir.path() / "p.html")["tokens_panel"];
  EXPECT_TRUE(t["clean"].is_null());
  EXPECT_TRUE(t["pca"].is_null());
}

}  // namespace
}  // namespace vitattn::report
