// A job's outputs as one commit (the settings record written last, everything removed when the
// job fails), what counts as done, and the batch files gathered from the done images only,
// under a lock shared with other batches into the same folder.
#include "pipeline/job_record.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "pipeline/batch_files.hpp"
#include "test_util.hpp"

namespace vitattn::pipeline {
namespace {
namespace fs = std::filesystem;

constexpr const char* kHeader = "file,rank,class,label,probability";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// --top with a settings record: each job writes <base>_attn.png, <base>_predictions.csv and
// <base>_settings.txt.
OutputSet top_outputs(const std::string& settings) {
  OutputSet o;
  o.top = true;
  o.settings = settings;
  return o;
}

// The outputs of a job drawn with `settings`: its overlay, its part (one row naming `name`) and its record.
void drawn(const fs::path& base, const std::string& name, const std::string& settings) {
  write(with_suffix(base, "_attn.png"), "png");
  write(with_suffix(base, "_predictions.csv"), std::string(kHeader) + "\n" + name + ",1,3,cat,0.9\n");
  write(with_suffix(base, "_settings.txt"), settings);
}

TEST(JobRecord, DoneOnlyWithEveryOutputAndThisRunsRecord) {
  test::TempDir d;
  const OutputSet outputs = top_outputs("layer 3\n");
  drawn(d / "done", "done", "layer 3\n");
  drawn(d / "other", "other", "layer 2\n");  // another run's settings
  drawn(d / "older", "older", "");
  fs::remove(d / "older_settings.txt");      // no record: an older vitattn, or a job that died midway
  drawn(d / "half", "half", "layer 3\n");
  fs::remove(d / "half_attn.png");           // an output missing: to do, whatever the record
  drawn(d / "longer", "longer", "layer 3\nmore\n");  // this run's record as a prefix is not it
  EXPECT_EQ(job_state(d / "done", outputs, false), JobState::done);
  EXPECT_EQ(job_state(d / "other", outputs, false), JobState::stale);
  EXPECT_EQ(job_state(d / "older", outputs, false), JobState::stale);
  EXPECT_EQ(job_state(d / "half", outputs, false), JobState::to_do);
  EXPECT_EQ(job_state(d / "longer", outputs, false), JobState::stale);
  fs::remove(d / "done_settings.txt");
  fs::create_symlink(d / "other_settings.txt", d / "done_settings.txt");  // a link is not a record of ours
  EXPECT_EQ(job_state(d / "done", outputs, false), JobState::stale);

  BatchPlan plan;
  for (const char* name : {"done", "other", "older", "half"}) plan.jobs.push_back({d / (std::string(name) + ".png"), d / name});
  fs::remove(d / "done_settings.txt");
  write(d / "done_settings.txt", "layer 3\n");
  const FinishedJobs finished = drop_finished_jobs(plan, outputs);
  EXPECT_EQ(finished.done, 1u);
  ASSERT_EQ(finished.redone.size(), 2u);
  EXPECT_EQ(finished.redone[0].output_base, d / "other");
  EXPECT_EQ(finished.redone[1].output_base, d / "older");
  EXPECT_EQ(plan.jobs.size(), 3u) << "the stale and the half-done jobs are drawn";
}

TEST(JobRecord, TheRecordIsRemovedFirstAndWrittenLast) {
  test::TempDir d;
  const OutputSet outputs = top_outputs("now\n");
  drawn(d / "x", "x", "before\n");
  const InputJob job{d / "x.png", d / "x"};
  commit_job(job, outputs, [&] {
    EXPECT_FALSE(fs::exists(d / "x_settings.txt")) << "the old record is still there while the outputs change";
    write(d / "x_attn.png", "new png");
    write(d / "x_predictions.csv", std::string(kHeader) + "\n");
  });
  EXPECT_EQ(read(d / "x_settings.txt"), "now\n");
  EXPECT_EQ(job_state(d / "x", outputs, false), JobState::done);
}

TEST(JobRecord, AFailedJobLeavesNoOutputsAndNoParts) {
  test::TempDir d;
  const OutputSet outputs = top_outputs("now\n");
  drawn(d / "x", "x", "now\n");  // an earlier run's outputs, done with these very settings
  write(d / "elsewhere.txt", "keep");
  fs::create_symlink(d / "elsewhere.txt", d / "y_attn.png");  // not a file of ours: never removed
  const InputJob job{d / "x.png", d / "x"};
  EXPECT_THROW(commit_job(job, outputs,
                          [&] {
                            write(d / "x_predictions.csv", std::string(kHeader) + "\nx,1,3,cat,0.9\n");  // the part first
                            throw Error("x.png: cannot write x_attn.png: No space left on device");
                          }),
               Error);
  for (const char* name : {"x_attn.png", "x_predictions.csv", "x_settings.txt"})
    EXPECT_FALSE(fs::exists(d / name)) << name << " left by a failed job";
  const InputJob y{d / "y.png", d / "y"};
  EXPECT_THROW(commit_job(y, outputs, [] { throw std::runtime_error("any failure"); }), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(d / "y_attn.png"));
  EXPECT_EQ(read(d / "elsewhere.txt"), "keep");
}

TEST(BatchFiles, OnlyTheDoneImagesPartsAreGathered) {
  // The batch is a, b, c, d in this order; b's record is another run's, c has none (its job
  // did not finish), d lacks its overlay. Only a's rows are gathered, whatever parts lie there.
  test::TempDir d;
  const fs::path out = d / "out";
  const OutputSet outputs = top_outputs("now\n");
  drawn(out / "a", "a", "now\n");
  drawn(out / "b", "b", "before\n");
  drawn(out / "c", "c", "now\n");
  fs::remove(out / "c_settings.txt");
  drawn(out / "d", "d", "now\n");
  fs::remove(out / "d_attn.png");
  std::vector<InputJob> jobs;
  for (const char* name : {"a", "b", "c", "d"}) jobs.push_back({d / (std::string(name) + ".png"), out / name});
  const BatchFilesWritten w = write_batch_files(out, jobs, outputs);
  EXPECT_TRUE(w.errors.empty());
  EXPECT_EQ(read(out / "predictions.csv"), std::string(kHeader) + "\na,1,3,cat,0.9\n");
  EXPECT_FALSE(fs::exists(out / ".vitattn-batch-files.lock")) << "the lock file is left behind";
}

TEST(BatchFiles, OtherBatchesInTheFolderFollowByPath) {
  // This batch: z then a (input order). Another batch with the same settings drew m and sub/k;
  // a third with other settings drew q. The file: this batch's rows in its order, then the
  // other batch's by path; q's never.
  test::TempDir d;
  const fs::path out = d / "out";
  const OutputSet outputs = top_outputs("now\n");
  for (const char* name : {"z", "a", "m", "sub/k"}) drawn(out / name, name, "now\n");
  drawn(out / "q", "q", "before\n");
  const std::vector<InputJob> jobs{{d / "z.png", out / "z"}, {d / "a.png", out / "a"}};
  write_batch_files(out, jobs, outputs);
  EXPECT_EQ(read(out / "predictions.csv"),
            std::string(kHeader) + "\nz,1,3,cat,0.9\na,1,3,cat,0.9\nm,1,3,cat,0.9\nsub/k,1,3,cat,0.9\n");
}

TEST(BatchFiles, AnotherBatchsGatheringIsWaitedFor) {
  // Another batch into the folder holds the lock (it is between gathering and renaming):
  // this one gathers only once it is let go, so it sees what the other finished.
  test::TempDir d;
  const fs::path out = d / "out";
  const OutputSet outputs = top_outputs("now\n");
  drawn(out / "a", "a", "now\n");
  std::optional<files::LockFile> other(std::in_place, out / ".vitattn-batch-files.lock");
  std::thread batch([&] { write_batch_files(out, {{d / "a.png", out / "a"}}, outputs); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(fs::exists(out / "predictions.csv")) << "written while another batch held the lock";
  drawn(out / "b", "b", "now\n");  // the other batch's image, finished before it let go
  other.reset();
  batch.join();
  EXPECT_EQ(read(out / "predictions.csv"), std::string(kHeader) + "\na,1,3,cat,0.9\nb,1,3,cat,0.9\n");
}

TEST(LockFile, ASecondHolderWaitsAndNoFileIsLeft) {
  test::TempDir d;
  const fs::path lock = d / ".lock";
  std::atomic<int> step{0};
  std::optional<files::LockFile> first(std::in_place, lock);
  std::thread second([&] {
    const files::LockFile l(lock);  // waits for the first
    EXPECT_EQ(step.load(), 1) << "got the lock while the first held it";
    step = 2;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(step.load(), 0);
  step = 1;
  first.reset();
  second.join();
  EXPECT_EQ(step.load(), 2);
  EXPECT_FALSE(fs::exists(lock));
  fs::create_symlink(d / "elsewhere", lock);  // never made through a link
  EXPECT_THROW(files::LockFile{lock}, Error);
  EXPECT_FALSE(fs::exists(d / "elsewhere"));
}

TEST(LockFile, OneOtherProgramsLockTooIsKept) {
  test::TempDir d;
  const fs::path lock = d / "blob.lock";
  { const files::LockFile held(lock, files::LockFile::OnRelease::keep); }
  EXPECT_TRUE(fs::is_regular_file(lock)) << "removed while others may wait on it";
  { const files::LockFile again(lock, files::LockFile::OnRelease::keep); }  // the kept file locks again
  EXPECT_TRUE(fs::is_regular_file(lock));
}

}  // namespace
}  // namespace vitattn::pipeline
