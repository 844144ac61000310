// No output replaces an input, and no two outputs are one file (pipeline/output_guard.hpp),
// on hand-made paths: the same file by another name (a symlink, "./a/../a", a hard link),
// batch-level files against named ones, and a named output over a file of another kind.
#include "pipeline/output_guard.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>

#include "core/error.hpp"
#include "model/single_head_layout.hpp"
#include "pipeline/batch_plan.hpp"
#include "test_util.hpp"

namespace vitattn::pipeline {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& p, const std::string& bytes = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// The Error `f` throws; fails the test when it throws none.
template <typename F>
Error refusal(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "not refused";
  return Error("not refused");
}

bool has(const Error& e, const std::string& text) { return std::string(e.what()).find(text) != std::string::npos; }

TEST(OutputGuard, AnOutputThatIsAnInputIsRefusedByAnyName) {
  test::TempDir d;
  touch(d / "a/photo.jpg");
  fs::create_symlink(d / "a/photo.jpg", d / "link.jpg");
  ASSERT_EQ(::link((d / "a/photo.jpg").c_str(), (d / "hard.jpg").c_str()), 0);
  const fs::path dotted = d.path() / "." / "a" / ".." / "a" / "photo.jpg";
  for (const fs::path& other : {d / "a/photo.jpg", d / "link.jpg", dotted, d / "hard.jpg"}) {
    OutputGuard guard;
    guard.reads(d / "a/photo.jpg", roles::input);
    const Error e = refusal([&] { guard.writes(other, roles::log); });
    ASSERT_TRUE(e.subject()) << other;
    EXPECT_EQ(e.subject()->role, roles::log);
    EXPECT_TRUE(has(e, "is an input of this run")) << e.what();
    EXPECT_TRUE(has(e, "not replaced")) << e.what();
  }
  // Told the other way round (the output first), the same refusal about the output.
  OutputGuard guard;
  guard.writes(d / "link.jpg", model::roles::saved_model);
  const Error e = refusal([&] { guard.reads(d / "a/photo.jpg", roles::input); });
  ASSERT_TRUE(e.subject());
  EXPECT_EQ(e.subject()->role, model::roles::saved_model);
}

TEST(OutputGuard, TheModelIsNotReplaced) {
  test::TempDir d;
  touch(d / "m.safetensors");
  OutputGuard guard;
  guard.reads(d / "m.safetensors", roles::model_file);
  const Error e = refusal([&] { guard.writes(d.path() / "." / "m.safetensors", model::roles::saved_model); });
  EXPECT_TRUE(has(e, "is the model file")) << e.what();
}

TEST(OutputGuard, TwoOutputsOfOneFileAreRefusedEvenBeforeEitherExists) {
  test::TempDir d;
  fs::create_directories(d / "out");
  {  // --save-model same.x --log-json same.x
    OutputGuard guard;
    guard.writes(d / "same.x", model::roles::saved_model);
    const Error e = refusal([&] { guard.writes(d.path() / "out" / ".." / "same.x", roles::log); });
    ASSERT_TRUE(e.subject());
    EXPECT_EQ(e.subject()->role, roles::log);
    EXPECT_TRUE(has(e, "is where the saved model goes too")) << e.what();
  }
  {  // the log at the batch's predictions.csv, and at its gallery
    for (const auto& [name, role] : {std::pair{predictions_name(), roles::predictions}, std::pair{report_index_name(), roles::gallery}}) {
      OutputGuard guard;
      guard.writes(d / "out" / name, role);
      const Error e = refusal([&] { guard.writes(d / ("out/" + name), roles::log); });
      EXPECT_TRUE(has(e, std::string("is where ") + role + " goes too")) << e.what();
    }
  }
  {  // the same output twice by two names
    OutputGuard guard;
    guard.writes(d / "out/a.json", roles::log);
    fs::create_symlink(d / "out", d / "linked");
    EXPECT_THROW(guard.writes(d / "linked/a.json", model::roles::saved_model), Error);
  }
}

TEST(OutputGuard, DifferentFilesPass) {
  test::TempDir d;
  touch(d / "a.jpg");
  touch(d / "b.jpg");
  OutputGuard guard;
  guard.reads(d / "a.jpg", roles::input);
  guard.reads(d / "a.jpg", roles::input);  // named twice: read twice, harmless
  guard.writes(d / "b.jpg.log", roles::log);
  guard.writes(d / "out/predictions.csv", roles::predictions);
  EXPECT_NO_THROW(guard.writes(d / "out/index.html", roles::gallery));
}

TEST(OutputGuard, ANamedOutputReplacesOnlyAFileOfItsKind) {
  test::TempDir d;
  touch(d / "photo.jpg", "\xff\xd8\xff\xe0 not a log");
  touch(d / "old.jsonl", "{\"path\":\"a.png\"}\n");
  OutputGuard guard;
  const Error e = refusal([&] { guard.writes(d / "photo.jpg", roles::log, files::FileKind::json_lines); });
  ASSERT_TRUE(e.subject());
  EXPECT_EQ(e.subject()->role, roles::log);
  EXPECT_TRUE(has(e, "exists and is a JPEG image, not a JSON Lines log")) << e.what();
  EXPECT_NO_THROW(guard.writes(d / "old.jsonl", roles::log, files::FileKind::json_lines));
}

TEST(OutputGuard, NoJobOutputReplacesAnInputNamedOnTheCommandLine) {
  test::TempDir d;
  touch(d / "x.png");
  touch(d / "x_attn.png");  // would be x.png's output in the same folder
  const auto guarded = [&](const std::vector<fs::path>& inputs, const OutputSet& outputs) {
    OutputGuard guard;
    guard.jobs(plan_batch(inputs, d.path(), false, outputs), outputs);
  };
  const Error e = refusal([&] { guarded({d / "x.png", d / "x_attn.png"}, {}); });
  EXPECT_FALSE(e.subject()) << "no caller named these files";
  EXPECT_TRUE(has(e, "x_attn.png: is an input of this run and where the output of ")) << e.what();
  // Every output counts: a head's overlay with --head all, the .npy files with --save-attention.
  touch(d / "y.png");
  touch(d / "y_attn_h1.png");
  EXPECT_NO_THROW(guarded({d / "y.png", d / "y_attn_h1.png"}, OutputSet{.head_overlays = 1}));
  EXPECT_THROW(guarded({d / "y.png", d / "y_attn_h1.png"}, OutputSet{.head_overlays = 2}), Error);
  touch(d / "z.png");
  touch(d / "z_cls.npy");
  EXPECT_NO_THROW(guarded({d / "z.png", d / "z_cls.npy"}, OutputSet{}));
  EXPECT_THROW(guarded({d / "z.png", d / "z_cls.npy"}, OutputSet{.save_attention = true}), Error);
}

TEST(OutputGuard, ANamedOutputAtAJobsOutputIsAboutTheNamedOne) {
  test::TempDir d;
  touch(d / "photo.jpg");
  OutputGuard guard;
  guard.jobs(plan_batch({d / "photo.jpg"}, d / "o3", false), {});
  const Error e = refusal([&] { guard.writes(d / "o3/photo_attn.png", model::roles::saved_model); });
  ASSERT_TRUE(e.subject());
  EXPECT_EQ(e.subject()->role, model::roles::saved_model);
  EXPECT_TRUE(has(e, "is where the output of ")) << e.what();
}

}  // namespace
}  // namespace vitattn::pipeline
