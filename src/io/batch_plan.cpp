#include "batch_plan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <map>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "file_io.hpp"

namespace vitattn::io {
namespace fs = std::filesystem;
namespace {

constexpr const char* kImageExtensions[] = {"jpg", "jpeg", "jpe", "png", "bmp", "dib", "tif", "tiff", "webp",
                                            "pbm", "pgm",  "ppm", "pnm", "jp2", "sr",  "ras", "exr",  "hdr"};

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p.lexically_normal() : c;
}

struct Candidate {
  fs::path input;
  fs::path rel_dir;  // sub-folder below the output folder
};

void walk_folder(const fs::path& dir, const fs::path& out_canonical, bool recursive, std::vector<Candidate>& found,
                 BatchPlan& plan, const std::function<void(const fs::path&)>& skipped) {
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    plan.errors.push_back(display(dir) + ": cannot list folder: " + ec.message());
    return;
  }
  std::vector<Candidate> here;
  for (const auto end = fs::recursive_directory_iterator(); it != end; it.increment(ec)) {
    if (ec) {
      plan.errors.push_back(display(dir) + ": error while listing: " + ec.message());
      break;
    }
    const fs::directory_entry& entry = *it;
    std::error_code sec;
    if (entry.is_directory(sec)) {
      const bool is_link = entry.is_symlink(sec);
      if (!recursive || is_link || canonical_or_self(entry.path()) == out_canonical) it.disable_recursion_pending();
      continue;
    }
    // A symlink named like an image that leads nowhere (dangling, or a loop) is a job, so
    // that the reader says what is wrong with it instead of it vanishing from the batch.
    const bool broken_link = entry.is_symlink(sec) && !fs::exists(entry.status(sec));
    if ((!entry.is_regular_file(sec) && !broken_link) || is_temporary_name(entry.path()) ||
        !has_image_extension(entry.path())) {
      if (skipped) skipped(entry.path());
      continue;
    }
    here.push_back({entry.path(), entry.path().lexically_relative(dir).parent_path()});
  }
  std::sort(here.begin(), here.end(), [](const Candidate& a, const Candidate& b) { return a.input < b.input; });
  found.insert(found.end(), here.begin(), here.end());
}

// What comes after `root` in `p`, when `p` lies below `root` by its words alone: relative,
// not empty, no "." or ".." anywhere. Empty otherwise.
fs::path below(const fs::path& root, const fs::path& p) {
  const fs::path rel = p.lexically_relative(root);
  if (rel.empty() || rel.is_absolute()) return {};
  for (const auto& part : rel)
    if (part.empty() || part == "." || part == "..") return {};
  return rel;
}

}  // namespace

bool has_image_extension(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return std::any_of(std::begin(kImageExtensions), std::end(kImageExtensions),
                     [&](const char* e) { return ext == e; });
}

fs::path with_suffix(const fs::path& base, const char* suffix) {
  fs::path p = base;
  p += suffix;
  return p;
}

BatchPlan plan_batch(const std::vector<fs::path>& inputs, const fs::path& out_dir, bool recursive,
                     const std::function<void(const fs::path&)>& skipped, const char* overlay_suffix) {
  BatchPlan plan;
  const fs::path out_canonical = canonical_or_self(out_dir);
  std::vector<Candidate> found;
  std::set<fs::path> seen;  // the same file named twice is done once
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<Candidate> from_dir;
      walk_folder(in, out_canonical, recursive, from_dir, plan, skipped);
      for (auto& c : from_dir)
        if (seen.insert(canonical_or_self(c.input)).second) found.push_back(std::move(c));
    } else if (seen.insert(canonical_or_self(in)).second) {
      found.push_back({in, {}});
    }
  }

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
      base[i] = out_dir / found[i].rel_dir / (found[i].input.stem().string() + (ext.empty() ? "" : "_" + ext.substr(1)));
    }
  }
  // Anything still shared, or an output that would overwrite an input, gets a counter.
  std::set<fs::path> input_paths;
  for (const auto& c : found) input_paths.insert(canonical_or_self(c.input));
  const auto suffixes = output_suffixes(true, overlay_suffix);
  auto clobbers_input = [&](const fs::path& b) {
    return std::any_of(suffixes.begin(), suffixes.end(),
                       [&](const char* s) { return input_paths.count(canonical_or_self(with_suffix(b, s))) > 0; });
  };
  std::set<fs::path> taken;
  for (std::size_t i = 0; i < found.size(); ++i) {
    fs::path candidate = base[i];
    for (int n = 2; taken.count(candidate) || clobbers_input(candidate); ++n)
      candidate = with_suffix(base[i], ("-" + std::to_string(n)).c_str());
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
    plan.jobs.push_back({found[i].input, candidate});
  }
  return plan;
}

std::vector<const char*> output_suffixes(bool save_attention, const char* overlay_suffix) {
  if (save_attention) return {overlay_suffix, "_attn.npy", "_cls.npy"};
  return {overlay_suffix};
}

std::size_t drop_finished_jobs(BatchPlan& plan, bool save_attention, const char* overlay_suffix) {
  const auto suffixes = output_suffixes(save_attention, overlay_suffix);
  return std::erase_if(plan.jobs, [&](const ImageJob& job) {
    return std::all_of(suffixes.begin(), suffixes.end(), [&](const char* s) {
      std::error_code ec;  // symlink_status: a link at an output name is not a finished output
      return fs::is_regular_file(fs::symlink_status(with_suffix(job.output_base, s), ec));
    });
  });
}

void prepare_output_path(const fs::path& out_dir, const ImageJob& job, bool save_attention, const char* overlay_suffix) {
  const std::string input = display(job.input);
  const fs::path rel = below(out_dir, with_suffix(job.output_base, overlay_suffix));
  if (rel.empty()) throw Error(input + ": output " + display(job.output_base) + " is not below " + display(out_dir));
  // Walk down from the output folder one name at a time with lstat, never through a link.
  fs::path dir = out_dir;
  for (const auto& part : rel.parent_path()) {
    dir /= part;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
      if (errno != ENOENT)
        throw Error(input + ": cannot use output folder " + display(dir) + ": " + std::strerror(errno));
      if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error(input + ": cannot create output folder " + display(dir) + ": " + std::strerror(errno));
      if (::lstat(dir.c_str(), &st) != 0)  // made by us or, just now, by another worker
        throw Error(input + ": cannot use output folder " + display(dir) + ": " + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
      throw Error(input + ": " + display(dir) + " in the output folder is a symbolic link; not followed, nothing written");
    if (!S_ISDIR(st.st_mode)) throw Error(input + ": " + display(dir) + " in the output folder is not a folder");
  }
  for (const char* suffix : output_suffixes(save_attention, overlay_suffix)) {
    const fs::path file = with_suffix(job.output_base, suffix);
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) continue;  // not there yet: the usual case
    if (S_ISLNK(st.st_mode))
      throw Error(input + ": " + display(file) + " is a symbolic link; not replaced, nothing written");
    if (!S_ISREG(st.st_mode)) throw Error(input + ": " + display(file) + " exists and is not a file; not replaced");
  }
}

}  // namespace vitattn::io
