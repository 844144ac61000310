// Softmax and top-K against a naive long-double loop; the labels, and predictions.csv's quoting.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/classify.hpp"
#include "core/error.hpp"
#include "model/class_labels.hpp"
#include "pipeline/predictions.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

TEST(Classify, SoftmaxMatchesNaiveLoopAndSumsToOne) {
  RowVector z(6);
  z << 3.5f, -1.0f, 80.0f, 79.0f, 0.0f, -300.0f;  // large values: the max must be subtracted first
  const std::vector<double> p = softmax(z);
  long double sum = 0;
  for (Eigen::Index i = 0; i < z.size(); ++i) sum += std::exp(static_cast<long double>(z[i]) - 80.0L);
  for (Eigen::Index i = 0; i < z.size(); ++i)
    EXPECT_NEAR(p[static_cast<std::size_t>(i)], static_cast<double>(std::exp(static_cast<long double>(z[i]) - 80.0L) / sum), 1e-15);
  double total = 0;
  for (double v : p) total += v;
  EXPECT_NEAR(total, 1.0, 1e-15);
}

// Softmax runs in double, so only logits above ln(DBL_MAX) ≈ 709.8 overflow exp() when the
// maximum is not subtracted first: these would give inf / inf = NaN.
TEST(Classify, SoftmaxOfLogitsPastDoubleRangeStaysFinite) {
  RowVector z(3);
  z << 750.0f, 749.0f, 0.0f;
  const std::vector<double> p = softmax(z);
  const double e = std::exp(-1.0);
  EXPECT_NEAR(p[0], 1.0 / (1.0 + e), 1e-15);
  EXPECT_NEAR(p[1], e / (1.0 + e), 1e-15);
  EXPECT_GE(p[2], 0.0);
  EXPECT_LT(p[2], 1e-300);
  EXPECT_EQ(top_classes(z, 1)[0].index, 0);
}

TEST(Classify, TopClassesOrderedWithTiesByIndex) {
  RowVector z(5);
  z << 1.0f, 4.0f, 2.0f, 4.0f, -1.0f;
  const auto top = top_classes(z, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);  // tied with 1: the lower index first
  EXPECT_EQ(top[2].index, 2);
  EXPECT_GT(top[1].probability, top[2].probability);
  EXPECT_EQ(top_classes(z, 99).size(), 5u);  // K over n_classes: all of them
}

TEST(ClassLabels, ConfigId2labelAndLabelNames) {
  EXPECT_EQ(model::config_labels(R"({"id2label": {"1": "dog", "0": "cat"}})", "c.json", 2), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(model::config_labels(R"({"label_names": ["a", "b", "c"]})", "c.json", 3), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(model::config_labels(R"({"hidden_size": 768})", "c.json", 3).empty());
  EXPECT_THROW(model::config_labels(R"({"id2label": {"0": "cat"}})", "c.json", 2), Error);          // too few
  EXPECT_THROW(model::config_labels(R"({"id2label": {"0": "a", "2": "b"}})", "c.json", 2), Error);  // index out of range
  EXPECT_THROW(model::config_labels(R"({"id2label": {"x": "a", "1": "b"}})", "c.json", 2), Error);  // not an index
  EXPECT_THROW(model::config_labels("{", "c.json", 2), Error);
}

// id2label's keys are class indices as text: read by their integer value, not in the JSON
// library's key order ("0", "1", "10", "11", "2", …), which agrees with it only below 11 classes.
TEST(ClassLabels, Id2labelIsReadByIntegerKeyPastTenClasses) {
  std::string json = R"({"id2label": {)";
  for (int i = 0; i < 12; ++i) json += (i ? ", " : "") + std::string("\"") + std::to_string(i) + "\": \"c" + std::to_string(i) + "\"";
  json += "}}";
  std::vector<std::string> want;
  // append, not "c" + to_string(i): GCC 12 at -O3 warns on that operator+'s insert at the front
  // (a bogus -Wrestrict in libstdc++'s char_traits, an error in the release build's -Werror).
  for (int i = 0; i < 12; ++i) want.push_back(std::string("c").append(std::to_string(i)));
  EXPECT_EQ(model::config_labels(json, "c.json", 12), want);
  // Two keys naming one index ("1" and "01") leave another without a name.
  EXPECT_THROW(model::config_labels(R"({"id2label": {"0": "a", "1": "b", "01": "c"}})", "c.json", 3), Error);
  EXPECT_THROW(model::config_labels(R"({"id2label": {"0": "", "1": "b", "00": "c"}})", "c.json", 3), Error);
}

TEST(ClassLabels, MetadataThenConfigThenImagenetThenNone) {
  test::TempDir dir;
  const auto config = dir.path() / "config.json";
  std::ofstream(config) << R"({"id2label": {"0": "from config", "1": "b"}})";
  const auto meta = model::find_class_labels({{"classes", "x, y"}}, "m", config, 2);
  EXPECT_EQ(meta.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(model::find_class_labels({}, "m", config, 2).names[0], "from config");
  EXPECT_THROW(model::find_class_labels({{"classes", "x,y,z"}}, "m", config, 2), Error);
  const auto in1k = model::find_class_labels({}, "m", dir.path() / "absent.json", 1000);
  ASSERT_EQ(in1k.names.size(), 1000u);
  EXPECT_EQ(in1k.names.front(), "tench");
  EXPECT_EQ(in1k.names.back(), "toilet tissue");
  EXPECT_TRUE(model::find_class_labels({}, "m", dir.path() / "absent.json", 7).names.empty());
  EXPECT_EQ(model::ClassLabels{}.label(4), "4");
}

TEST(Predictions, CsvQuotesCommasAndQuotes) {
  const model::ClassLabels labels{{"plain", "a, \"b\""}, "test"};
  const std::vector<pipeline::ImagePrediction> p = {{"x,y.png", {{1, 0.75}, {0, 0.25}}}};
  EXPECT_EQ(pipeline::predictions_csv(p, labels),
            "file,rank,class,label,probability\n"
            "\"x,y.png\",1,1,\"a, \"\"b\"\"\",0.75\n"
            "\"x,y.png\",2,0,plain,0.25\n");
  EXPECT_EQ(pipeline::prediction_line(p[0], labels), "x,y.png: a, \"b\" 75.00%, plain 25.00%");
}

}  // namespace
}  // namespace vitattn
