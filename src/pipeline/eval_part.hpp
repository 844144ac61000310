#pragma once
// One image's measurements for `vitattn eval`, <name>_eval.csv (job_outputs.hpp's
// eval_part_suffix), written by its job and read back by a later run: --skip-existing, the run
// after the shards and a run after an interruption gather eval.csv and its siblings from these
// parts (eval_job.hpp), so the parts hold everything the aggregate reads, exactly: the
// aggregate of parts read back is the aggregate of the same measurements in memory, byte for
// byte. Text, a line per map and measure:
//
//   method,measure,values
//   attention,map,                                  (each method's first line, values empty)
//   attention,counts,<correct> <labeled> <∩ background> <∩ object> <∪ background> <∪ object>
//   attention,ap,<AP>
//   attention,pointing,<0|1>                        (not with an empty mask)
//   attention,positive,<AUC> <hit at 0> … <hit at 0.9>
//   attention,negative,<AUC> <hits …>
//   attention,sanity,<Spearman at depth 1> … <at depth L>
//
// Every method of the run has its lines in the run's order (the random baseline last), its
// "map" line first; a measure not made (no mask, no classifier, --no-sanity) has no line. Doubles are written with
// 17 significant digits ("{:.17g}"), which read back (std::from_chars, correctly rounded) give
// the same double: the exactness above.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/perturbation.hpp"
#include "core/segmentation_metrics.hpp"

namespace vitattn::pipeline {

// One map's measurements on one image; each absent when it was not measured.
struct MapScores {
  std::string method;
  std::optional<SegmentationCounts> counts;
  std::optional<double> ap;      // with counts
  std::optional<bool> pointing;  // not with an empty mask
  std::optional<PerturbationCurve> positive, negative;  // auc and hits (fractions are not kept)
  std::vector<double> sanity;  // per depth 1 … L (blocks randomised from the top); empty: not measured
};

struct ImageScores {
  bool done = false;
  std::filesystem::path input;
  std::vector<MapScores> maps;  // the run's methods, in order
};

// The part's text.
std::string eval_part_text(const ImageScores& scores);

// The part at `path`, for `input`, whose methods must be `methods` in this order. Throws Error
// naming the file (and the line) when it cannot be read or is not such a part.
ImageScores read_eval_part(const std::filesystem::path& path, const std::filesystem::path& input,
                           const std::vector<std::string>& methods);

}  // namespace vitattn::pipeline
