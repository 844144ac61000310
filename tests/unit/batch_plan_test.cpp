// Which files a batch reads and where each output goes.
#include "io/batch_plan.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.hpp"

namespace vitattn::io {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

std::vector<std::string> outputs(const BatchPlan& plan, const fs::path& root) {
  std::vector<std::string> names;
  for (const auto& j : plan.jobs) names.push_back(with_suffix(j.output_base, "_attn.png").lexically_relative(root).string());
  return names;
}

TEST(BatchPlan, FolderKeepsImagesOnlySortedAndNotRecursiveByDefault) {
  test::TempDir d;
  for (const char* f : {"in/b.jpg", "in/a.PNG", "in/notes.txt", "in/sub/c.jpg"}) touch(d / f);
  std::vector<fs::path> skipped;
  const BatchPlan flat = plan_batch({d / "in"}, d / "out", false, [&](const fs::path& p) { skipped.push_back(p); });
  EXPECT_EQ(outputs(flat, d / "out"), (std::vector<std::string>{"a_attn.png", "b_attn.png"}));
  EXPECT_EQ(skipped.size(), 1u);
  const BatchPlan deep = plan_batch({d / "in"}, d / "out", true);
  EXPECT_EQ(outputs(deep, d / "out"), (std::vector<std::string>{"a_attn.png", "b_attn.png", "sub/c_attn.png"}));
}

TEST(BatchPlan, SameStemInOneFolderIsResolvedDeterministically) {
  test::TempDir d;
  for (const char* f : {"in/cat.jpg", "in/cat.png", "in/dog.jpg"}) touch(d / f);
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", false);
  EXPECT_EQ(outputs(plan, d / "out"), (std::vector<std::string>{"cat_jpg_attn.png", "cat_png_attn.png", "dog_attn.png"}));
  EXPECT_EQ(plan.renamed.size(), 2u);
}

TEST(BatchPlan, SameNameFromTwoFoldersGetsACounter) {
  test::TempDir d;
  touch(d / "a/cat.jpg");
  touch(d / "b/cat.jpg");
  const BatchPlan plan = plan_batch({d / "a/cat.jpg", d / "b/cat.jpg"}, d / "out", false);
  EXPECT_EQ(outputs(plan, d / "out"), (std::vector<std::string>{"cat_jpg_attn.png", "cat_jpg-2_attn.png"}));
}

TEST(BatchPlan, NeverOverwritesAnInput) {
  test::TempDir d;
  touch(d / "x.png");
  touch(d / "x_attn.png");  // would be x.png's output in the same folder
  const BatchPlan plan = plan_batch({d / "x.png", d / "x_attn.png"}, d.path(), false);
  for (const auto& j : plan.jobs) {
    EXPECT_NE(with_suffix(j.output_base, "_attn.png"), d / "x_attn.png");
    EXPECT_NE(with_suffix(j.output_base, "_attn.png"), d / "x.png");
  }
}

TEST(BatchPlan, OutputFolderInsideTheInputIsNotWalked) {
  test::TempDir d;
  touch(d / "in/a.jpg");
  touch(d / "in/out/a_attn.png");
  const BatchPlan plan = plan_batch({d / "in"}, d / "in/out", true);
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_EQ(plan.jobs[0].input, d / "in/a.jpg");
}

TEST(BatchPlan, FilesNamedDirectlyAreJobsWhateverTheirExtension) {
  test::TempDir d;
  touch(d / "readme.txt");
  const BatchPlan plan = plan_batch({d / "readme.txt", d / "missing.jpg", d / "readme.txt"}, d / "out", false);
  ASSERT_EQ(plan.jobs.size(), 2u);  // named twice: done once
}

}  // namespace
}  // namespace vitattn::io
