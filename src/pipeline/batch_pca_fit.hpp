#pragma once
// One PCA fit over every image of a batch, made before its jobs so that each image's PCA
// picture uses the same components (pca_fit.hpp; the image command's batch fit choice).
#include <cstddef>
#include <optional>
#include <vector>

#include "batch_events.hpp"
#include "batch_plan.hpp"
#include "core/pca.hpp"
#include "core/vit.hpp"
#include "process_image.hpp"

namespace vitattn::pipeline {

// The images among `jobs` (the jobs less the videos).
std::size_t image_jobs(const std::vector<InputJob>& jobs);

// The fitting pass: every image of `jobs` (the whole batch: also under a shard, and those
// skip-existing will pass over), one after the other in input order, each forward on every
// core, its patch features added to one CovarianceSum (D×D doubles, whatever the number of
// images), so that every shard makes the same fit, bit for bit. An image that cannot be read
// is left out (its own job fails and says why). Returns the fit as a fit file holds it
// (as_in_file); nothing when events.should_stop() said so. Throws Error when no image could
// be read. `sharded`: said in the opening line (every shard repeats the pass).
std::optional<PcaFit> fit_batch_pca(const std::vector<InputJob>& jobs, const VitModel& model,
                                    const ProcessOptions& process, bool sharded, BatchEvents& events);

}  // namespace vitattn::pipeline
