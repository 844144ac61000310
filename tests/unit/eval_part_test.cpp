// <name>_eval.csv (pipeline/eval_part.hpp): read back, a part gives the very doubles written
// (the batch files gathered from parts are then those made in memory, byte for byte: the e2e
// side is tests/oracle/test_eval.py), and a file that is no part of this run is one line
// naming the file and its line.
#include "pipeline/eval_part.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "files/file_io.hpp"
#include "pipeline/job_outputs.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

using pipeline::ImageScores;
using pipeline::MapScores;
using test::error_of;
using test::TempDir;

// Doubles whose shortest decimal form is long, or that 9 digits would not give back.
ImageScores awkward_scores() {
  ImageScores s;
  s.done = true;
  s.input = "in/a.png";
  MapScores a;
  a.method = "attention";
  a.counts = SegmentationCounts{9216, 9216, {{1234, 4321}}, {{5000, 7000}}};
  a.ap = 0.1 + 0.2;
  a.pointing = false;
  a.positive = PerturbationCurve{{}, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 100.0 / 3.0};
  a.negative = PerturbationCurve{{}, {1, 0, 1, 1, 1, 1, 1, 1, 1, 0}, 64.999999999999986};
  a.sanity = {-0.37358058608058609, 1.0 / 7.0, std::numeric_limits<double>::denorm_min(), -0.0};
  MapScores r;  // no mask, no classifier: nothing but its map line
  r.method = "random";
  s.maps = {a, r};
  return s;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::bit_cast<std::uint64_t>(a[i]), std::bit_cast<std::uint64_t>(b[i])) << i;
}

TEST(EvalPart, ReadBackGivesTheSameDoublesBitForBit) {
  TempDir dir;
  const ImageScores s = awkward_scores();
  const std::string text = pipeline::eval_part_text(s);
  files::write_file_atomic(dir / "a_eval.csv", text.data(), text.size());
  const ImageScores back = pipeline::read_eval_part(dir / "a_eval.csv", "in/a.png", {"attention", "random"});
  ASSERT_TRUE(back.done);
  ASSERT_EQ(back.maps.size(), 2u);
  const MapScores& a = back.maps[0];
  EXPECT_EQ(a.counts->correct, 9216);
  EXPECT_EQ(a.counts->intersection[1], 4321);
  EXPECT_EQ(a.counts->union_[0], 5000);
  expect_same_bits({*a.ap, a.positive->auc, a.negative->auc}, {0.1 + 0.2, 100.0 / 3.0, 64.999999999999986});
  expect_same_bits(a.positive->hits, s.maps[0].positive->hits);
  expect_same_bits(a.sanity, s.maps[0].sanity);
  EXPECT_EQ(a.pointing, std::optional<bool>(false));
  const MapScores& r = back.maps[1];
  EXPECT_FALSE(r.counts || r.ap || r.pointing || r.positive || r.negative);
  EXPECT_TRUE(r.sanity.empty());
  EXPECT_EQ(pipeline::eval_part_text(back), text);
}

TEST(EvalPart, AFileThatIsNoPartOfThisRunIsOneLineNamingIt) {
  TempDir dir;
  const std::string good = pipeline::eval_part_text(awkward_scores());
  const auto error_reading = [&](const std::string& text, const std::vector<std::string>& methods) {
    files::write_file_atomic(dir / "x_eval.csv", text.data(), text.size());
    return error_of([&] { pipeline::read_eval_part(dir / "x_eval.csv", "x.png", methods); });
  };
  const std::string where = (dir / "x_eval.csv").string();
  EXPECT_EQ(error_reading(good, {"attention", "chefer", "random"}),
            where + ":9: not a vitattn eval part of this run: map random where the run's methods are attention chefer random");
  EXPECT_EQ(error_reading(good, {"attention"}),
            where + ":9: not a vitattn eval part of this run: map random where the run's methods are attention");
  EXPECT_NE(error_reading(good.substr(0, good.size() - 3), {"attention", "random"}).find("cut short"), std::string::npos);
  EXPECT_NE(error_reading("method,measure,values\nattention,map,\nattention,ap,0.5x\n", {"attention"}).find(":3: "),
            std::string::npos);
  EXPECT_NE(error_reading("method,measure,values\nattention,map,\nattention,iou,1\n", {"attention"}).find("unknown measure iou"),
            std::string::npos);
  EXPECT_NE(error_reading("file,method\n", {"attention"}).find(":1: "), std::string::npos);
  EXPECT_NE(error_reading("", {"attention"}).find("empty"), std::string::npos);
}

TEST(EvalPart, AnEvalJobWritesItsPartThenItsRecordAndNoOverlay) {
  pipeline::OutputSet o;
  o.eval = true;
  o.settings = "s";
  EXPECT_EQ(pipeline::output_suffixes(o), (std::vector<std::string>{"_eval.csv", "_settings.txt"}));
  o.save_attention = true;
  o.map_tags = {"_attention", "_random"};
  EXPECT_EQ(pipeline::output_suffixes(o),
            (std::vector<std::string>{"_cls_attention.npy", "_cls_random.npy", "_eval.csv", "_settings.txt"}));
  EXPECT_TRUE(pipeline::is_output_name("photos/cat_eval.csv"));
}

}  // namespace
}  // namespace vitattn
