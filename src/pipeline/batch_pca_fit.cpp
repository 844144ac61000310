#include "batch_pca_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "files/text.hpp"
#include "pca_fit.hpp"
#include "threads.hpp"

namespace vitattn::pipeline {

std::size_t image_jobs(const std::vector<InputJob>& jobs) {
  return static_cast<std::size_t>(std::count_if(jobs.begin(), jobs.end(), [](const InputJob& j) { return !j.video; }));
}

std::optional<PcaFit> fit_batch_pca(const std::vector<InputJob>& jobs, const VitModel& model,
                                    const ProcessOptions& process, bool sharded, BatchEvents& events) {
  using Level = BatchEvents::Level;
  set_library_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const std::string fit = events.named(roles::pca_fit);
  events.message(Level::info, fmt::format("{} batch: one PCA over the {} first (one more forward each){}", fit,
                                          files::counted(image_jobs(jobs), "image", "images"),
                                          sharded ? fmt::format("; every shard fits over the whole batch, {} FILE avoids it", fit)
                                                  : std::string()));
  CovarianceSum sum(pca_feature_width(model));
  std::size_t used = 0;
  for (const InputJob& job : jobs) {
    if (job.video || events.should_stop()) continue;
    try {
      const PatchFeatures f = image_patch_features(job.input, model, process);
      sum.add(f.features, f.grid_h, f.grid_w);
      ++used;
    } catch (const std::exception& e) {  // an image's own failure (also one over the pixel limit): its job says it
      events.message(Level::debug, fmt::format("{} batch: left out of the fit: {}", fit, e.what()));  // the error names the input
    }
  }
  if (events.should_stop()) return std::nullopt;
  if (used == 0) throw Error(fit + " batch: no image of the batch could be read");
  PcaFit result = as_in_file(fit_pca(sum));
  events.message(Level::debug, fmt::format("{} batch: one fit over {}", fit, files::counted(used, "image", "images")));
  return result;
}

}  // namespace vitattn::pipeline
