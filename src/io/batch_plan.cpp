#include "batch_plan.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <system_error>

#include "file_io.hpp"

namespace vitattn::io {
namespace fs = std::filesystem;
namespace {

constexpr const char* kImageExtensions[] = {"jpg", "jpeg", "jpe", "png", "bmp", "dib", "tif", "tiff", "webp",
                                            "pbm", "pgm",  "ppm", "pnm", "jp2", "sr",  "ras", "exr",  "hdr"};

constexpr const char* kOutputSuffixes[] = {"_attn.png", "_attn.npy", "_cls.npy"};

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
    if (!entry.is_regular_file(sec) || is_temporary_name(entry.path()) || !has_image_extension(entry.path())) {
      if (skipped) skipped(entry.path());
      continue;
    }
    here.push_back({entry.path(), entry.path().lexically_relative(dir).parent_path()});
  }
  std::sort(here.begin(), here.end(), [](const Candidate& a, const Candidate& b) { return a.input < b.input; });
  found.insert(found.end(), here.begin(), here.end());
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
                     const std::function<void(const fs::path&)>& skipped) {
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
  auto clobbers_input = [&](const fs::path& b) {
    return std::any_of(std::begin(kOutputSuffixes), std::end(kOutputSuffixes),
                       [&](const char* s) { return input_paths.count(canonical_or_self(with_suffix(b, s))) > 0; });
  };
  std::set<fs::path> taken;
  for (std::size_t i = 0; i < found.size(); ++i) {
    fs::path candidate = base[i];
    for (int n = 2; taken.count(candidate) || clobbers_input(candidate); ++n)
      candidate = with_suffix(base[i], ("-" + std::to_string(n)).c_str());
    if (candidate != out_dir / found[i].rel_dir / found[i].input.stem())
      plan.renamed.push_back(display(found[i].input) + " → " + display(with_suffix(candidate, "_attn.png")) +
                             " (another input has the same name)");
    taken.insert(candidate);
    plan.jobs.push_back({found[i].input, candidate});
  }
  return plan;
}

}  // namespace vitattn::io
