// pipeline::run_batch with a recording BatchEvents: what a front end is told, in which order,
// and the outcome it gets, for inputs made here by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "core/seeded_model.hpp"
#include "image/image_writer.hpp"
#include "pipeline/run_batch.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

namespace fs = std::filesystem;
using pipeline::BatchEvents;

// Every event as one line, in the order told.
class Recorder final : public BatchEvents {
 public:
  bool stop = false;
  std::vector<std::string> lines;

  std::optional<std::string> name_of(const std::string& role) const override {
    if (role == pipeline::roles::pca_fit) return std::string("FIT");
    return std::nullopt;
  }
  void message(Level level, const std::string& text) override {
    if (level != Level::debug) add("message " + text);
  }
  void checked(const pipeline::OutputSet&) override { add("checked"); }
  void jobs_starting(const std::vector<pipeline::InputJob>& jobs, int workers) override {
    add("starting " + std::to_string(jobs.size()) + " on " + std::to_string(workers));
  }
  void job_started(const pipeline::InputJob& job) override { add(job.input.filename().string() + " started"); }
  void job_finished(const pipeline::InputJob& job, const std::string& error, double ms) override {
    EXPECT_GE(ms, 0.0);
    add(job.input.filename().string() + (error.empty() ? " ok" : " failed: " + error));
  }
  void jobs_done() override { add("done"); }
  void batch_files_written(const std::vector<fs::path>& written, const std::vector<std::string>& errors) override {
    add("batch files " + std::to_string(written.size()) + " written, " + std::to_string(errors.size()) + " failed");
  }
  bool should_stop() override { return stop; }

 private:
  void add(const std::string& line) {
    const std::lock_guard lock(mutex_);
    lines.push_back(line);
  }
  std::mutex mutex_;
};

class RunBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "in");
    cv::Mat image(40, 48, CV_8UC3);
    cv::randu(image, 0, 255);
    image::write_image_atomic(dir_ / "in" / "a.png", image);
    image::write_image_atomic(dir_ / "in" / "b.png", image);
    std::ofstream(dir_ / "in" / "c.png") << "not an image";  // planned by its name, unreadable
    request_.inputs = {dir_ / "in" / "a.png", dir_ / "in" / "b.png", dir_ / "in" / "c.png"};
    request_.output = dir_ / "out";
    request_.jobs = 1;  // one worker: the jobs end in input order
    request_.model = &model_;
  }

  test::TempDir dir_;
  VitModel model_ = make_seeded_model(SeededShape{32, 8, 24, 8}, 1);
  pipeline::BatchRequest request_;
};

TEST_F(RunBatch, TellsEachJobInOrderAndCountsTheFailedOne) {
  Recorder events;
  const pipeline::BatchOutcome outcome = pipeline::run_batch(request_, events);

  ASSERT_EQ(events.lines.size(), 10u);
  EXPECT_EQ(events.lines[0], "checked");
  EXPECT_EQ(events.lines[1], "starting 3 on 1");
  EXPECT_EQ(events.lines[2], "a.png started");
  EXPECT_EQ(events.lines[3], "a.png ok");
  EXPECT_EQ(events.lines[4], "b.png started");
  EXPECT_EQ(events.lines[5], "b.png ok");
  EXPECT_EQ(events.lines[6], "c.png started");
  EXPECT_EQ(events.lines[7].rfind("c.png failed: ", 0), 0u) << events.lines[7];
  EXPECT_NE(events.lines[7].find((dir_ / "in" / "c.png").string()), std::string::npos) << "the error names the file";
  EXPECT_EQ(events.lines[8], "done");
  EXPECT_EQ(events.lines[9], "batch files 0 written, 0 failed");  // none asked for

  EXPECT_FALSE(outcome.found_none);
  EXPECT_EQ(outcome.total, 3u);
  EXPECT_EQ(outcome.videos, 0u);
  EXPECT_EQ(outcome.counts.written, 2u);
  EXPECT_EQ(outcome.counts.failed, 1u);
  EXPECT_EQ(outcome.counts.not_started, 0u);
  EXPECT_EQ(outcome.stop, pipeline::StopReason::none);
  EXPECT_TRUE(outcome.plan_errors.empty());
  EXPECT_TRUE(outcome.batch_file_errors.empty());
  EXPECT_GE(outcome.seconds, 0.0);

  // The two images' outputs are there, none of the unreadable file's.
  const pipeline::OutputSet outputs = pipeline::written_outputs(model_, request_.process);
  ASSERT_EQ(outcome.jobs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    for (const fs::path& p : pipeline::output_paths(outcome.jobs[i].output_base, outputs))
      EXPECT_EQ(fs::exists(p), i < 2) << p;
}

TEST_F(RunBatch, AStopBeforeTheJobsStartsNone) {
  Recorder events;
  events.stop = true;
  const pipeline::BatchOutcome outcome = pipeline::run_batch(request_, events);
  EXPECT_EQ(events.lines, (std::vector<std::string>{"checked", "batch files 0 written, 0 failed"}));
  EXPECT_EQ(outcome.counts.written + outcome.counts.failed, 0u);
  EXPECT_EQ(outcome.counts.not_started, 3u);
  EXPECT_EQ(outcome.stop, pipeline::StopReason::requested);
}

TEST_F(RunBatch, ABatchFitOverOneImageIsRefusedInTheFrontEndsWords) {
  request_.inputs = {dir_ / "in" / "a.png"};
  request_.process.pca.emplace();
  request_.pca_fit.kind = pipeline::PcaFitChoice::Kind::batch;
  Recorder events;
  EXPECT_EQ(test::error_of([&] { pipeline::run_batch(request_, events); }),
            "FIT batch: fits one PCA over the images of a batch, and this run has 1 image; use FIT image (the default)");
  EXPECT_TRUE(events.lines.empty()) << "refused before the guard passed";
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "nothing written";
}

TEST_F(RunBatch, NoInputFoundIsSaidAndRunsNothing) {
  fs::create_directories(dir_ / "empty");
  request_.inputs = {dir_ / "empty"};
  Recorder events;
  const pipeline::BatchOutcome outcome = pipeline::run_batch(request_, events);
  EXPECT_TRUE(outcome.found_none);
  EXPECT_EQ(events.lines, (std::vector<std::string>{"checked", "message no images found in the inputs given"}));
}

}  // namespace
}  // namespace vitattn
