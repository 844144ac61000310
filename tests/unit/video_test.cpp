// Videos among the inputs: picked up by extension, their output names, the whole-file
// temporary they are written to, and the bounded queue between the stages of a video.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <numeric>
#include <thread>

#include "files/file_io.hpp"
#include "video/video_reader.hpp"
#include "pipeline/batch_plan.hpp"
#include "pipeline/frame_queue.hpp"
#include "pipeline/job_outputs.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

TEST(Video, ExtensionsAnyCase) {
  for (const char* name : {"a.mp4", "a.MOV", "a.mkv", "a.WebM", "a.avi"}) EXPECT_TRUE(video::has_video_extension(name)) << name;
  for (const char* name : {"a.png", "a.gif", "mp4", "a.mp4.txt", "a."}) EXPECT_FALSE(video::has_video_extension(name)) << name;
}

TEST(Video, FolderTakesVideosBesideImagesAndMarksThem) {
  test::TempDir d;
  for (const char* f : {"in/a.mp4", "in/b.PNG", "in/c.MKV", "in/d.txt", "in/e.gif"}) touch(d / f);
  const pipeline::BatchPlan plan = pipeline::plan_batch({d / "in"}, d / "out", false);
  ASSERT_EQ(plan.jobs.size(), 3u);
  EXPECT_EQ(plan.jobs[0].input.filename(), "a.mp4");
  EXPECT_TRUE(plan.jobs[0].video);
  EXPECT_FALSE(plan.jobs[1].video);
  EXPECT_TRUE(plan.jobs[2].video);
  EXPECT_EQ(plan.warnings.size(), 1u);  // e.gif: not supported
}

TEST(Video, OutputNamesFollowTheCodecAndAreKnownAsOutputs) {
  pipeline::OutputSet outputs;
  outputs.save_attention = true;
  EXPECT_EQ(pipeline::output_paths("o/clip", outputs, true), (std::vector<fs::path>{"o/clip_attn.mp4", "o/clip_cls.npy"}));
  outputs.video_extension = ".avi";
  outputs.save_attention = false;
  EXPECT_EQ(pipeline::output_paths("o/clip", outputs, true), (std::vector<fs::path>{"o/clip_attn.avi"}));
  outputs.top = true;  // the classes frame by frame, then the settings record, last
  outputs.settings = "s";
  EXPECT_EQ(pipeline::output_paths("o/clip", outputs, true),
            (std::vector<fs::path>{"o/clip_attn.avi", "o/clip_predictions.csv", "o/clip_settings.txt"}));
  for (const char* name : {"clip_attn.mp4", "clip_attn.avi"}) EXPECT_TRUE(pipeline::is_output_name(name)) << name;
  for (const char* name : {"clip.mp4", "clip_attn.mkv"}) EXPECT_FALSE(pipeline::is_output_name(name)) << name;
}

TEST(Video, TemporaryPathKeepsTheExtensionAndIsRemovedUnlessCommitted) {
  test::TempDir d;
  fs::path tmp;
  {
    const files::TemporaryPath t(d / "clip_attn.mp4");
    tmp = t.path();
    EXPECT_EQ(tmp.extension(), ".mp4");  // the encoder picks its container by it
    EXPECT_TRUE(files::is_temporary_name(tmp));
    touch(tmp);
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(d / "clip_attn.mp4"));
  files::TemporaryPath t(d / "clip_attn.mp4");
  touch(t.path());
  t.commit();
  EXPECT_TRUE(fs::exists(d / "clip_attn.mp4"));
  EXPECT_FALSE(fs::exists(t.path()));
}

TEST(Video, FrameQueueKeepsOrderBoundsAndCloses) {
  pipeline::FrameQueue<int> q(2);
  std::vector<int> got;
  int pushed = 0;
  std::thread producer([&] {
    for (int i = 0; i < 100 && q.push(i); ++i) ++pushed;
    q.close();
  });
  for (std::optional<int> v; (v = q.pop());) got.push_back(*v);
  q.close();  // a consumer that stopped early must not leave the producer waiting forever
  producer.join();
  EXPECT_EQ(pushed, 100);
  std::vector<int> want(100);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(got, want);
  EXPECT_FALSE(q.push(1));  // closed: dropped
  EXPECT_FALSE(q.pop().has_value());
  // A producer waiting for room is released by close() from the other side.
  pipeline::FrameQueue<int> full(1);
  ASSERT_TRUE(full.push(0));
  std::thread blocked([&] { EXPECT_FALSE(full.push(1)); });
  full.close();
  blocked.join();
}

TEST(Video, FrameReorderHandsOnInSequenceOrderAndBoundsWhatItHolds) {
  // Two producers put 0..199 in whatever order their threads run; the taker sees 0, 1, 2, ….
  constexpr int kItems = 200;
  pipeline::FrameQueue<int> in(4);
  pipeline::FrameReorder<int> out(3, 2);
  std::thread feeder([&] {
    for (int i = 0; i < kItems; ++i) in.push(i);
    in.close();
  });
  auto produce = [&] {
    for (std::optional<int> v; (v = in.pop());) {
      if (*v % 3 == 0) std::this_thread::yield();  // finish out of order now and then
      out.put(*v, *v * 10);
    }
    out.done();
  };
  std::thread a(produce), b(produce);
  std::vector<int> got;
  for (std::optional<int> v; (v = out.take());) got.push_back(*v);
  feeder.join();
  a.join();
  b.join();
  std::vector<int> want(kItems);
  for (int i = 0; i < kItems; ++i) want[static_cast<std::size_t>(i)] = i * 10;
  EXPECT_EQ(got, want);
  // A later result that is there first is not handed on before the next one in order.
  pipeline::FrameReorder<int> late(4, 1);
  ASSERT_TRUE(late.put(1, 11));
  std::optional<int> first;
  std::thread taker([&] { first = late.take(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(late.put(0, 10));
  taker.join();
  EXPECT_EQ(first, std::optional<int>(10));
  EXPECT_EQ(late.take(), std::optional<int>(11));
  // A result `window` ahead of the next one waits for room; close() releases it, and take()
  // then gives nothing, even what is held.
  pipeline::FrameReorder<int> held(2, 1);
  ASSERT_TRUE(held.put(1, 1));
  std::thread ahead([&] { EXPECT_FALSE(held.put(2, 2)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  held.close();
  ahead.join();
  EXPECT_FALSE(held.take().has_value());
  // Every producer done and the next result missing: take() ends instead of waiting.
  pipeline::FrameReorder<int> gap(4, 1);
  ASSERT_TRUE(gap.put(1, 1));
  gap.done();
  EXPECT_FALSE(gap.take().has_value());
}

}  // namespace
}  // namespace vitattn
