// Which files a batch reads and where each output goes.
#include "pipeline/batch_plan.hpp"
#include "pipeline/output_folders.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "core/error.hpp"

#include "test_util.hpp"

namespace vitattn::pipeline {
namespace {
namespace fs = std::filesystem;

const OutputSet kPngOnly{};
const OutputSet kWithNpy{.save_attention = true};

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
  const BatchPlan flat = plan_batch({d / "in"}, d / "out", false);
  EXPECT_EQ(outputs(flat, d / "out"), (std::vector<std::string>{"a_attn.png", "b_attn.png"}));
  EXPECT_EQ(flat.skipped.size(), 2u);  // notes.txt, and sub/ without -r
  EXPECT_TRUE(flat.warnings.empty());
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

// That no output replaces an input is the guard's: output_guard_test.cpp.

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

// Every output of `plan` lies directly or in a sub-folder below `out`, by its words alone.
void expect_all_below(const BatchPlan& plan, const fs::path& out) {
  for (const auto& j : plan.jobs) {
    const fs::path rel = with_suffix(j.output_base, "_attn.png").lexically_relative(out);
    ASSERT_FALSE(rel.empty()) << j.output_base;
    EXPECT_FALSE(rel.is_absolute()) << rel;
    for (const auto& part : rel) EXPECT_TRUE(part != ".." && part != ".") << rel;
  }
}

TEST(BatchPlan, InputsWithDotDotOrAbsolutePathsLandDirectlyInTheOutputFolder) {
  test::TempDir d;
  touch(d / "a/b/one.png");
  touch(d / "x/two.png");
  touch(d / "three.png");
  fs::create_directories(d / "work");
  // "../x/two.png" as a user would type it from d/work, and as seen from the test's cwd.
  const fs::path dotdot_from_cwd = (d / "x/two.png").lexically_relative(fs::current_path());
  ASSERT_EQ(*dotdot_from_cwd.begin(), "..");
  const BatchPlan plan = plan_batch({d / "a/b/../b/one.png", dotdot_from_cwd, fs::absolute(d / "three.png")},
                                    d / "work/out", false);
  EXPECT_EQ(outputs(plan, d / "work/out"), (std::vector<std::string>{"one_attn.png", "two_attn.png", "three_attn.png"}));
  expect_all_below(plan, d / "work/out");
  EXPECT_TRUE(plan.errors.empty());
}

TEST(BatchPlan, RecursiveWalksMirrorOnlyTheSubFoldersBelowTheInput) {
  test::TempDir d;
  touch(d / "in/s1/s2/deep.jpg");
  touch(d / "in/..dots/odd.jpg");  // a folder whose name starts with ".." is an ordinary name
  touch(d / "elsewhere/far.jpg");
  // The same folder named three ways: plain, with "..", with a trailing "/.".
  for (const fs::path& in : {d / "in", d / "elsewhere/../in", fs::path((d / "in").string() + "/.")}) {
    const BatchPlan plan = plan_batch({in}, d / "out", true);
    EXPECT_EQ(outputs(plan, d / "out"), (std::vector<std::string>{"..dots/odd_attn.png", "s1/s2/deep_attn.png"})) << in;
    expect_all_below(plan, d / "out");
  }
}

TEST(BatchPlan, SymlinkLoopsInAWalkEndAndBrokenImageLinksBecomeJobs) {
  test::TempDir d;
  touch(d / "in/a.jpg");
  fs::create_directories(d / "in/sub");
  fs::create_directory_symlink("..", d / "in/sub/up");   // a loop back to in/
  fs::create_directory_symlink(".", d / "in/self");       // a loop onto itself
  fs::create_symlink("loop.png", d / "in/loop.png");      // a file link to itself: ELOOP
  fs::create_symlink("gone.jpg", d / "in/dangling.jpg");  // to nothing
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", true);
  std::vector<std::string> inputs;
  for (const auto& j : plan.jobs) inputs.push_back(j.input.lexically_relative(d / "in").string());
  EXPECT_EQ(inputs, (std::vector<std::string>{"a.jpg", "dangling.jpg", "loop.png"}));
}

std::vector<std::string> inputs_of(const BatchPlan& plan, const fs::path& root) {
  std::vector<std::string> inputs;
  for (const auto& j : plan.jobs) inputs.push_back(j.input.lexically_relative(root).string());
  return inputs;
}

// A file reached by several names is done once, under its own name: a symlink sorted before
// it (alias.jpg < photo.jpg), or named before it, is the name dropped, with a warning.
TEST(BatchPlan, TheSameFileTwiceKeepsTheNameThatIsNoSymlink) {
  test::TempDir d;
  touch(d / "in/photo.jpg");
  touch(d / "in/other.jpg");
  fs::create_symlink("photo.jpg", d / "in/alias.jpg");
  fs::create_symlink(d / "in/photo.jpg", d / "in/zlink.jpg");
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", false);
  EXPECT_EQ(inputs_of(plan, d / "in"), (std::vector<std::string>{"other.jpg", "photo.jpg"}));
  EXPECT_EQ(outputs(plan, d / "out"), (std::vector<std::string>{"other_attn.png", "photo_attn.png"}));
  const std::string kept = (d / "in/photo.jpg").string();
  EXPECT_EQ(plan.warnings, (std::vector<std::string>{(d / "in/alias.jpg").string() + ": skipped, the same file as " + kept + " (done once)",
                                                     (d / "in/zlink.jpg").string() + ": skipped, the same file as " + kept + " (done once)"}));
  // Named on the command line, the link first: the same.
  const BatchPlan named = plan_batch({d / "in/alias.jpg", d / "in/photo.jpg"}, d / "out", false);
  EXPECT_EQ(inputs_of(named, d / "in"), (std::vector<std::string>{"photo.jpg"}));
  ASSERT_EQ(named.warnings.size(), 1u);
  EXPECT_EQ(named.warnings[0].rfind((d / "in/alias.jpg").string() + ": skipped", 0), 0u) << named.warnings[0];
  // Every name a link: the first is kept.
  fs::create_directories(d / "links");
  fs::create_symlink(d / "in/other.jpg", d / "links/b.jpg");
  fs::create_symlink(d / "in/other.jpg", d / "links/a.jpg");
  const BatchPlan links = plan_batch({d / "links"}, d / "out", false);
  EXPECT_EQ(inputs_of(links, d / "links"), (std::vector<std::string>{"a.jpg"}));
  ASSERT_EQ(links.warnings.size(), 1u);
  EXPECT_EQ(links.warnings[0].rfind((d / "links/b.jpg").string() + ": skipped", 0), 0u) << links.warnings[0];
}

TEST(BatchPlan, FinishedJobsAreDroppedOnlyWhenEveryOutputIsAFile) {
  test::TempDir d;
  for (const char* f : {"in/done.png", "in/half.png", "in/todo.png", "in/linked.png"}) touch(d / f);
  touch(d / "out/done_attn.png");
  touch(d / "out/done_attn.npy");
  touch(d / "out/done_cls.npy");
  touch(d / "out/half_attn.png");  // no .npy files yet
  touch(d / "elsewhere.png");
  fs::create_symlink(d / "elsewhere.png", d / "out/linked_attn.png");  // a link is not an output of ours
  BatchPlan png_only = plan_batch({d / "in"}, d / "out", false);
  EXPECT_EQ(drop_finished_jobs(png_only, kPngOnly).done, 2u);
  EXPECT_EQ(outputs(png_only, d / "out"), (std::vector<std::string>{"linked_attn.png", "todo_attn.png"}));
  BatchPlan with_npy = plan_batch({d / "in"}, d / "out", false);
  EXPECT_EQ(drop_finished_jobs(with_npy, kWithNpy).done, 1u);
  EXPECT_EQ(outputs(with_npy, d / "out"),
            (std::vector<std::string>{"half_attn.png", "linked_attn.png", "todo_attn.png"}));
}

TEST(BatchPlan, PrepareOutputPathMakesMirroredFolders) {
  test::TempDir d;
  touch(d / "in/s1/s2/deep.jpg");
  fs::create_directories(d / "out");
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", true);
  ASSERT_EQ(plan.jobs.size(), 1u);
  prepare_output_path(d / "out", plan.jobs[0], kWithNpy);
  EXPECT_TRUE(fs::is_directory(d / "out/s1/s2"));
  prepare_output_path(d / "out", plan.jobs[0], kWithNpy);  // again: already there is fine
}

TEST(BatchPlan, PrepareOutputPathNeverFollowsAFolderLinkOutOfTheOutputFolder) {
  test::TempDir d;
  touch(d / "in/sub/x.jpg");
  touch(d / "in/sub/deeper/y.jpg");
  fs::create_directories(d / "out");
  fs::create_directories(d / "elsewhere");
  fs::create_directory_symlink(d / "elsewhere", d / "out/sub");
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", true);
  ASSERT_EQ(plan.jobs.size(), 2u);
  for (const auto& job : plan.jobs) {
    try {
      prepare_output_path(d / "out", job, kPngOnly);
      ADD_FAILURE() << job.input << ": a symlinked sub-folder was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(job.input.string() + ": ", 0), 0u) << what;  // names the input first
      EXPECT_NE(what.find("out/sub in the output folder is a symbolic link"), std::string::npos) << what;
    }
  }
  EXPECT_TRUE(fs::is_empty(d / "elsewhere")) << "nothing made through the link";
}

TEST(BatchPlan, PrepareOutputPathRefusesALinkAtAnOutputName) {
  test::TempDir d;
  touch(d / "in/x.png");
  touch(d / "victim.txt");
  fs::create_directories(d / "out");
  fs::create_symlink(d / "victim.txt", d / "out/x_cls.npy");
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", false);
  ASSERT_EQ(plan.jobs.size(), 1u);
  prepare_output_path(d / "out", plan.jobs[0], kPngOnly);  // x_cls.npy is not written without --save-attention
  EXPECT_THROW(prepare_output_path(d / "out", plan.jobs[0], kWithNpy), Error);
  fs::create_symlink(d / "victim.txt", d / "out/x_attn.png");
  EXPECT_THROW(prepare_output_path(d / "out", plan.jobs[0], kPngOnly), Error);
  EXPECT_TRUE(fs::is_symlink(d / "out/x_attn.png")) << "the link itself is left as it was";
}

TEST(BatchPlan, TheOutputFolderItselfMayBeALink) {
  test::TempDir d;
  touch(d / "in/sub/x.png");
  fs::create_directories(d / "real");
  fs::create_directory_symlink(d / "real", d / "out");  // the user named it: followed
  const BatchPlan plan = plan_batch({d / "in"}, d / "out", true);
  ASSERT_EQ(plan.jobs.size(), 1u);
  prepare_output_path(d / "out", plan.jobs[0], kPngOnly);
  EXPECT_TRUE(fs::is_directory(d / "real/sub"));
}

TEST(JobOutputs, OneListForEveryOutput) {
  const OutputSet all_heads{.save_attention = true, .head_overlays = 3};
  EXPECT_EQ(output_suffixes(kPngOnly), (std::vector<std::string>{"_attn.png"}));
  EXPECT_EQ(output_suffixes(all_heads), (std::vector<std::string>{"_attn.png", "_attn_h0.png", "_attn_h1.png",
                                                                  "_attn_h2.png", "_attn.npy", "_cls.npy"}));
  EXPECT_EQ(output_paths("o/x", kWithNpy), (std::vector<fs::path>{"o/x_attn.png", "o/x_attn.npy", "o/x_cls.npy"}));
  OutputSet maps{.save_attention = true};  // several maps: each its overlay and values, no _cls.npy
  maps.map_tags = {map_tag("rollout", std::nullopt), map_tag("chefer", 5)};
  EXPECT_EQ(output_suffixes(maps), (std::vector<std::string>{"_attn.png", "_attn_rollout.png", "_attn_chefer_c5.png",
                                                             "_attn.npy", "_cls_rollout.npy", "_cls_chefer_c5.npy"}));
  EXPECT_EQ(map_tag("", 12), "_c12");
}

TEST(JobOutputs, WordsCsvIsAnOutputOfItsOwn) {
  OutputSet words;  // --save-attention with texts
  words.save_attention = true;
  words.words = true;
  words.settings = "any";
  EXPECT_EQ(output_suffixes(words),
            (std::vector<std::string>{"_attn.png", "_attn.npy", "_cls.npy", "_words.csv", "_settings.txt"}));
  EXPECT_TRUE(is_output_name("x_words.csv"));
  EXPECT_FALSE(is_output_name("_words.csv"));
  EXPECT_FALSE(is_output_name("x_words.txt"));
}

TEST(JobOutputs, OutputNamesAreRecognisedWhateverTheOptions) {
  // --format writes the overlays as .jpg or .webp too.
  for (const char* name : {"x_attn.png", "a b_attn_h0.png", "x_attn_h12.png", "x_attn.npy", "x_cls.npy", "x-2_attn.png",
                           "x_attn.jpg", "x_attn_h3.jpg", "x_attn.webp", "x_attn_h0.webp", "x_mask.npy",
                           // several maps: --method all, --class a,b
                           "x_attn_chefer.png", "x_attn_grad-rollout.jpg", "x_attn_c7.png", "x_attn_legrad_c12.webp",
                           "x_attn_attention.png", "x_cls_gradcam.npy", "x_cls_c3.npy", "x_cls_rollout_c3.npy"})
    EXPECT_TRUE(is_output_name(name)) << name;
  for (const char* name : {"x.png", "_attn.png", "x_attn_h.png", "_attn_h3.png", "x_attn_hx.png", "x_attn.jpeg", "attn.png",
                           "x_attn_h3.gif", "x_attn.tiff", "_attn.jpg", "x_attn_lime.png", "x_attn_c.png", "_attn_c3.png",
                           "x_attn_chefer_cx.png", "x_cls_c3.png", "x_attn_chefer.npy", "_cls_chefer.npy", "x_chefer.png"})
    EXPECT_FALSE(is_output_name(name)) << name;
}

TEST(BatchPlan, OutputsOfAnEarlierRunInTheOutputTreeAreLeftOut) {
  test::TempDir d;
  touch(d / "in/a.jpg");
  touch(d / "in/a_attn.png");
  touch(d / "in/a_attn_h1.png");
  touch(d / "in/sub/b.png");
  touch(d / "in/sub/b_attn.png");
  touch(d / "other/c_attn.png");  // named like an output, but not in the output tree: an input
  const BatchPlan plan = plan_batch({d / "in", d / "other"}, d / "in", true);
  std::vector<std::string> inputs;
  for (const auto& j : plan.jobs) inputs.push_back(j.input.lexically_relative(d.path()).string());
  EXPECT_EQ(inputs, (std::vector<std::string>{"in/a.jpg", "in/sub/b.png", "other/c_attn.png"}));
  EXPECT_EQ(outputs(plan, d / "in"), (std::vector<std::string>{"a_attn.png", "sub/b_attn.png", "c_attn_attn.png"}));
  EXPECT_EQ(plan.own_outputs.size(), 3u);
}

}  // namespace
}  // namespace vitattn::pipeline
