#include "pipeline/faithfulness_part.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <opencv2/imgproc.hpp>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "pipeline/job_outputs.hpp"
#include "pipeline/predictions.hpp"

namespace vitattn::pipeline {

ImageTensor blurred_input(const ImageTensor& x, int patch_size) {
  const double sigma = patch_size;
  const int ksize = 2 * static_cast<int>(std::ceil(4.0 * sigma)) + 1;  // ±4σ: the tails past it weigh < 1e-4
  ImageTensor out = x;
  const std::size_t plane = static_cast<std::size_t>(x.height) * static_cast<std::size_t>(x.width);
  for (std::size_t c = 0; c < 3; ++c) {
    const cv::Mat src(x.height, x.width, CV_32F, const_cast<float*>(x.chw.data() + c * plane));
    cv::Mat dst(x.height, x.width, CV_32F, out.chw.data() + c * plane);  // written in place: same size and type
    cv::GaussianBlur(src, dst, cv::Size(ksize, ksize), sigma, sigma, cv::BORDER_REFLECT_101);
  }
  return out;
}

std::vector<FaithfulnessRow> faithfulness_rows(const VitModel& model, const ImageTensor& x,
                                               const std::vector<ScoredMap>& maps, const FaithfulnessRequest& request,
                                               bool scale) {
  if (maps.empty()) return {};
  const ImageTensor blurred = blurred_input(x, model.patch_size);
  const FaithfulnessSettings settings{request.steps, scale};
  const Matrix random = random_map(static_cast<int>(maps.front().map.rows()), static_cast<int>(maps.front().map.cols()));
  std::vector<int> classes;  // in the order the maps first name them
  for (const ScoredMap& m : maps)
    if (std::find(classes.begin(), classes.end(), m.class_index) == classes.end()) classes.push_back(m.class_index);
  std::vector<FaithfulnessRow> rows;
  const auto score = [&](const std::string& method, const Matrix& map, int c) {
    const FaithfulnessCurves curves = faithfulness_curves(model, x, blurred, map, c, settings);
    rows.push_back({method, c, curves.deletion_auc, curves.insertion_auc, request.steps});
  };
  for (const int c : classes) {
    for (const ScoredMap& m : maps)
      if (m.class_index == c) score(m.method, m.map, c);
    score("random", random, c);
  }
  return rows;
}

std::string faithfulness_csv(const std::filesystem::path& input, const std::vector<FaithfulnessRow>& rows) {
  std::string csv = std::string(batch_file(&OutputSet::faithfulness).header) + "\n";
  const std::string path = csv_field(input.string());
  for (const FaithfulnessRow& r : rows)
    csv += fmt::format("{},{},{},{:.9g},{:.9g},{}\n", path, csv_field(r.method), r.class_index, r.deletion_auc,
                       r.insertion_auc, r.steps);
  return csv;
}

void write_faithfulness_part(const std::filesystem::path& part, const std::filesystem::path& input,
                             const VitModel& model, const ImageTensor& x, const std::vector<ScoredMap>& maps,
                             const FaithfulnessRequest& request, bool scale) {
  const std::vector<FaithfulnessRow> rows =  // the core names no file
      naming_source(files::display(input), [&] { return faithfulness_rows(model, x, maps, request, scale); });
  const std::string csv = faithfulness_csv(input, rows);
  files::write_file_atomic(part, csv.data(), csv.size());
}

}  // namespace vitattn::pipeline
