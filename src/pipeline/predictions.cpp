#include "pipeline/predictions.hpp"

#include <fmt/format.h>

#include "files/file_io.hpp"
#include "pipeline/job_outputs.hpp"

namespace vitattn::pipeline {
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string prediction_line(const ImagePrediction& p, const model::ClassLabels& labels) {
  std::string line = files::display(p.input) + ":";
  for (std::size_t r = 0; r < p.top.size(); ++r)
    line += fmt::format("{} {} {:.2f}%", r ? "," : "", files::printable(labels.label(p.top[r].index)), 100.0 * p.top[r].probability);
  return line;
}

std::string predictions_csv(const std::vector<ImagePrediction>& predictions, const model::ClassLabels& labels) {
  std::string csv = std::string(batch_file(&OutputSet::top).header) + "\n";
  for (const ImagePrediction& p : predictions)
    for (std::size_t r = 0; r < p.top.size(); ++r)
      // 9 significant digits: enough to tell apart any two float32 probabilities.
      csv += fmt::format("{},{},{},{},{:.9g}\n", csv_field(p.input.string()), r + 1, p.top[r].index,
                         csv_field(labels.label(p.top[r].index)), p.top[r].probability);
  return csv;
}

std::string frame_predictions_csv(const std::filesystem::path& input, const std::vector<FramePrediction>& frames,
                                  const model::ClassLabels& labels) {
  std::string csv = "file,frame,rank,class,label,probability\n";
  const std::string file = csv_field(input.string());
  for (const FramePrediction& f : frames)
    for (std::size_t r = 0; r < f.top.size(); ++r)
      csv += fmt::format("{},{},{},{},{},{:.9g}\n", file, f.frame, r + 1, f.top[r].index,
                         csv_field(labels.label(f.top[r].index)), f.top[r].probability);
  return csv;
}

void write_predictions(const std::filesystem::path& path, const std::vector<ImagePrediction>& predictions,
                       const model::ClassLabels& labels) {
  const std::string csv = predictions_csv(predictions, labels);
  files::write_file_atomic(path, csv.data(), csv.size());
}

}  // namespace vitattn::pipeline
