#include "batch_plan.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <map>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "image/image_formats.hpp"
#include "video/video_reader.hpp"
#include "job_record.hpp"
#include "output_folders.hpp"

namespace vitattn::pipeline {
using namespace vitattn::files;  // the formats this step reads and writes
using namespace vitattn::image;
using namespace vitattn::video;
namespace fs = std::filesystem;
namespace {


fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p.lexically_normal() : c;
}

struct Candidate {
  fs::path input;
  fs::path rel_dir;  // sub-folder below the output folder
  fs::path root_relative;  // InputJob::root_relative
};

const char* file_kind(fs::file_type type) {
  switch (type) {
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    default: return "not a file nor a folder";
  }
}

// Every entry of a folder ends as a job, a warning (anything image-like that is dropped) or a
// quiet note (-v lists them): nothing found is passed over in silence.
void walk_folder(const fs::path& dir, const fs::path& out_canonical, bool recursive, std::vector<Candidate>& found,
                 BatchPlan& plan) {
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    plan.errors.push_back(display(dir) + ": cannot list folder: " + ec.message());
    return;
  }
  auto warn = [&](const fs::path& p, const std::string& why) { plan.warnings.push_back(display(p) + ": skipped, " + why); };
  auto note = [&](const fs::path& p, const std::string& why) { plan.skipped.push_back(display(p) + ": skipped, " + why); };
  auto folder_not_walked = [&](const fs::path& p) {
    note(p, "a folder (the walk is not recursive)");
    ++plan.folders_not_walked;
  };
  std::vector<Candidate> here;
  for (const auto end = fs::recursive_directory_iterator(); it != end; it.increment(ec)) {
    if (ec) {
      plan.errors.push_back(display(dir) + ": error while listing: " + ec.message());
      break;
    }
    const fs::directory_entry& entry = *it;
    const fs::path& path = entry.path();
    std::error_code sec;
    if (entry.is_directory(sec)) {
      if (entry.is_symlink(sec)) {  // never followed: no loops, no walking out of the tree
        it.disable_recursion_pending();
        if (recursive) warn(path, "a symbolic link to a folder is not followed");
        else folder_not_walked(path);
      } else if (canonical_or_self(path) == out_canonical) {
        it.disable_recursion_pending();
        note(path, "the output folder");
      } else if (!recursive) {
        it.disable_recursion_pending();
        folder_not_walked(path);
      }
      continue;
    }
    if (is_temporary_name(path)) {
      note(path, "a temporary file of an unfinished write");
      continue;
    }
    const ImageFormat* format = format_by_extension(path);
    // A symlink named like an image that leads nowhere (dangling, or a loop) is a job, so
    // that the reader says what is wrong with it instead of it vanishing from the batch.
    const bool broken_link = entry.is_symlink(sec) && !fs::exists(entry.status(sec));
    const bool video = !format && has_video_extension(path);
    if (!format && !video) {
      note(path, broken_link ? "a broken symbolic link" : entry.is_regular_file(sec) ? "not an image by its extension"
                                                                                 : "not a regular file");
    } else if (format && !format->readable) {
      warn(path, std::string("format not supported (") + format->name + ")");
    } else if (!entry.is_regular_file(sec) && !broken_link) {
      warn(path, std::string("not a regular file (") + file_kind(entry.status(sec).type()) + ")");
    } else {
      const fs::path rel = path.lexically_relative(dir);
      here.push_back({path, rel.parent_path(), rel});
    }
  }
  std::sort(here.begin(), here.end(), [](const Candidate& a, const Candidate& b) { return a.input < b.input; });
  found.insert(found.end(), here.begin(), here.end());
}

bool is_link(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(p, ec));
}

// The same file reached by several names (named twice, or a symlink beside the file it leads
// to) is done once, under the name that is not a symlink (the file's own), else the first; it
// keeps that name's place in the order. Each name dropped gets a warning naming the one kept.
std::vector<Candidate> once_per_file(const std::vector<Candidate>& reached, std::vector<std::string>& warnings) {
  std::vector<fs::path> file(reached.size());
  std::map<fs::path, std::size_t> kept;  // the file itself → the index of the name it is done under
  for (std::size_t i = 0; i < reached.size(); ++i) {
    file[i] = canonical_or_self(reached[i].input);
    const auto [k, fresh] = kept.emplace(file[i], i);
    if (!fresh && is_link(reached[k->second].input) && !is_link(reached[i].input)) k->second = i;
  }
  std::vector<Candidate> once;
  for (std::size_t i = 0; i < reached.size(); ++i) {
    const std::size_t k = kept.at(file[i]);
    if (k == i) once.push_back(reached[i]);
    else warnings.push_back(display(reached[i].input) + ": skipped, the same file as " + display(reached[k].input) + " (done once)");
  }
  return once;
}

}  // namespace

fs::path with_suffix(const fs::path& base, const char* suffix) {
  fs::path p = base;
  p += suffix;
  return p;
}

BatchPlan plan_batch(const std::vector<fs::path>& inputs, const fs::path& out_dir, bool recursive,
                     const OutputSet& outputs) {
  BatchPlan plan;
  const fs::path out_canonical = canonical_or_self(out_dir);
  // An earlier run's output: named like one and in the output tree (the folder the file is
  // in, resolved, lies at or below the output folder; the file itself may be a link).
  const auto own_output = [&out_canonical](const fs::path& p) {
    std::error_code ec;
    const fs::path dir = canonical_or_self(fs::absolute(p, ec).parent_path());
    return is_output_name(p) && (dir == out_canonical || !below(out_canonical, dir).empty());
  };
  std::vector<Candidate> reached;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<Candidate> from_dir;
      walk_folder(in, out_canonical, recursive, from_dir, plan);
      for (auto& c : from_dir) {
        if (own_output(c.input)) plan.own_outputs.push_back(c.input);
        else reached.push_back(std::move(c));
      }
    } else {
      reached.push_back({in, {}, in.lexically_normal()});
    }
  }
  const std::vector<Candidate> found = once_per_file(reached, plan.warnings);

  // Name every output "<stem>", then resolve collisions deterministically.
  std::vector<fs::path> base(found.size());
  std::map<fs::path, std::vector<std::size_t>> by_base;
  for (std::size_t i = 0; i < found.size(); ++i) {
    base[i] = out_dir / found[i].rel_dir / found[i].input.stem();
    by_base[base[i]].push_back(i);
  }
  for (const auto& [b, users] : by_base) {
    if (users.size() < 2) continue;
    for (std::size_t i : users) {
      const std::string ext = found[i].input.extension().string();
      base[i] = out_dir / found[i].rel_dir / (ext.empty() ? found[i].input.stem().string()
                                                            : fmt::format("{}_{}", found[i].input.stem().string(), ext.substr(1)));
    }
  }
  // Anything still shared gets a counter.
  const std::string image_overlay = output_suffixes(outputs).front();        // "_attn.png" (or the --format's)
  const std::string video_overlay = video_output_suffixes(outputs).front();  // "_attn.mp4" (or .avi)
  std::set<fs::path> taken;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const char* overlay_suffix = (has_video_extension(found[i].input) ? video_overlay : image_overlay).c_str();
    fs::path candidate = base[i];
    for (int n = 2; taken.count(candidate); ++n) candidate = with_suffix(base[i], fmt::format("-{}", n).c_str());
    if (candidate != out_dir / found[i].rel_dir / found[i].input.stem())
      plan.renamed.push_back(display(found[i].input) + " → " + display(with_suffix(candidate, overlay_suffix)) +
                             " (another input has the same name)");
    taken.insert(candidate);
    // Outputs are named from the input's stem and the sub-folder it was found in, so they
    // stay below the output folder; this makes sure of it, whatever the input path held.
    if (below(out_dir, with_suffix(candidate, overlay_suffix)).empty()) {
      plan.errors.push_back(display(found[i].input) + ": its output " + display(with_suffix(candidate, overlay_suffix)) +
                            " would fall outside the output folder; skipped");
      continue;
    }
    plan.jobs.push_back({found[i].input, candidate, found[i].root_relative, has_video_extension(found[i].input)});
  }
  return plan;
}

bool job_finished(const InputJob& job, const OutputSet& outputs) {
  return job_state(job.output_base, outputs, job.video) == JobState::done;
}

FinishedJobs drop_finished_jobs(BatchPlan& plan, const OutputSet& outputs) {
  FinishedJobs finished;
  finished.done = std::erase_if(plan.jobs, [&](const InputJob& job) {
    const JobState state = job_state(job.output_base, outputs, job.video);
    if (state == JobState::stale) finished.redone.push_back(job);
    return state == JobState::done;
  });
  return finished;
}

std::size_t keep_shard(std::vector<InputJob>& jobs, Shard shard) {
  return std::erase_if(jobs, [shard](const InputJob& job) { return !in_shard(job.root_relative.generic_string(), shard); });
}

}  // namespace vitattn::pipeline
