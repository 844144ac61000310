#pragma once
// No output replaces an input, and no two outputs are one file: the one place that says so.
// Every file a run reads (its images, the model) and every file it writes (each job's
// outputs, the batch's predictions.csv and index.html, the log, the saved model, explain's
// heatmap and page) is told to one OutputGuard before anything is written; the first clash
// throws, naming both files and what would be lost. So does an existing file that an output
// of a given kind may not replace: every page vitattn writes replaces only a page it wrote.
//
// "The same file" is decided by the file system, not by the names: an existing file is its
// device and inode (so a symlink, "./a/../a" and a hard link are all the file they lead to),
// a file still to be written is its path with the folder resolved. Roles are data that the
// caller chooses ("an input of this run", "the log"); the guard never names a flag, and the
// Error it throws is about {role, path} (core/error.hpp) so that a caller with flags can say
// its own name for the role.
#include <sys/types.h>

#include <compare>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "batch_plan.hpp"
#include "core/error.hpp"
#include "files/file_kind.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

// Roles the pipeline names itself; a caller may use them or its own.
namespace roles {
inline constexpr const char* input = "an input of this run";
inline constexpr const char* model_file = "the model file";
inline constexpr const char* class_list = "a class list of this run";  // the zero-shot labels or templates
inline constexpr const char* log = "the log";
inline constexpr const char* predictions = "the predictions file";  // <out>/predictions.csv
inline constexpr const char* faithfulness = "the faithfulness file";  // <out>/faithfulness.csv
inline constexpr const char* heads = "the head statistics file";      // <out>/heads.csv
inline constexpr const char* gallery = "the gallery page";          // <out>/index.html
inline constexpr const char* eval_files = "vitattn eval's results";  // <out>/eval.csv, eval_images.csv, eval_curves.csv, eval.html
}  // namespace roles

// A file a run writes besides its jobs' outputs (the log, the saved model), with its role and
// the kind of file it may replace (none: only a file that does not exist or is not the run's).
struct NamedWrite {
  std::filesystem::path file;
  std::string role;
  std::optional<files::FileKind> kind;
};

class OutputGuard {
 public:
  // A file the run reads. Throws when an output already told is this file.
  void reads(const std::filesystem::path& file, const std::string& role);

  // A file the run writes, named by the caller (the log, the saved model): throws Error about
  // {role, file} when it is a file the run reads or that another output writes; with `kind`,
  // also when it exists and is a file of another kind (files::check_replaceable), so that only
  // an earlier output of the same kind is replaced.
  void writes(const std::filesystem::path& file, const std::string& role,
              std::optional<files::FileKind> kind = std::nullopt);

  // A file the run derives from an input (forward's <stem>_attention.npy): as writes, but the
  // Error has no Subject (no caller named the file), and `role` says whose output it is.
  void derives(const std::filesystem::path& file, const std::string& role);

  // Every job of `plan`: its input is read, and each of its outputs (output_paths) written,
  // as "the output of <input>". Throws Error (without a Subject: no caller named these files)
  // when one of them is a file told before, or told after through reads/writes, or an
  // existing file that output may not replace (replaces_only: a page vitattn did not write).
  void jobs(const BatchPlan& plan, const OutputSet& outputs);

 private:
  // A file: its inode when it exists, else its path with the folder resolved.
  struct Key {
    dev_t device = 0;
    ino_t inode = 0;
    std::string path;  // only when the file does not exist (yet)
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    std::filesystem::path file;  // as the caller named it
    std::string role;
    bool written = false;
    bool named = false;  // written by a caller's name for it (writes), not derived from a job (jobs)
  };
  Key key_of(const std::filesystem::path& file);
  void add(Entry entry);
  static Error clash(const Entry& written, const Entry& other);  // `written` would replace `other`
  static void check_kind(const std::filesystem::path& file, const std::string& role);  // a derived output's replaces_only
  std::map<Key, Entry> files_;
  std::map<std::filesystem::path, std::filesystem::path> folders_;  // folder as named → resolved
};

}  // namespace vitattn::pipeline
