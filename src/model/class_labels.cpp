#include "model/class_labels.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::model {
extern const char* const kImagenet1kClassesText;  // imagenet_classes.cpp, generated at build time

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "plane,car,bird" → {"plane", "car", "bird"}, each name trimmed of spaces.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    names.push_back(name);
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

void check_count(const std::vector<std::string>& names, int n_classes, const std::string& where) {
  if (static_cast<int>(names.size()) != n_classes)
    throw Error(fmt::format("{}: {} class names for a classifier of {} classes", where, names.size(), n_classes));
}

}  // namespace

std::string ClassLabels::label(int index) const {
  return index >= 0 && static_cast<std::size_t>(index) < names.size() ? names[static_cast<std::size_t>(index)]
                                                                        : std::to_string(index);
}

std::vector<std::string> config_labels(const std::string& json_text, const std::string& source, int n_classes) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", source, files::printable(e.what(), true)));
  }
  if (!config.is_object()) throw Error(fmt::format("{}: not a JSON object", source));
  std::vector<std::string> names;
  if (const auto it = config.find("id2label"); it != config.end() && it->is_object()) {  // Hugging Face
    names.assign(it->size(), std::string());
    check_count(names, n_classes, source + ": id2label");
    std::vector<bool> named(names.size(), false);  // by index: a name may itself be empty
    for (const auto& [key, value] : it->items()) {
      std::size_t used = 0;
      int i = -1;
      try {
        i = std::stoi(key, &used);
      } catch (const std::exception&) {
      }
      if (used != key.size() || i < 0 || i >= n_classes || !value.is_string() || named[static_cast<std::size_t>(i)])
        throw Error(fmt::format("{}: id2label entry \"{}\" is not a distinct class index 0…{} with a name", source,
                                files::printable(key, true), n_classes - 1));
      names[static_cast<std::size_t>(i)] = value.get<std::string>();
      named[static_cast<std::size_t>(i)] = true;
    }
  } else if (const auto ln = config.find("label_names"); ln != config.end() && ln->is_array()) {  // timm
    for (const auto& v : *ln) {
      if (!v.is_string()) throw Error(fmt::format("{}: label_names holds a value that is not a string", source));
      names.push_back(v.get<std::string>());
    }
    check_count(names, n_classes, source + ": label_names");
  }
  return names;
}

const std::vector<std::string>& imagenet1k_classes() {
  static const std::vector<std::string> names = split_lines(kImagenet1kClassesText);
  return names;
}

ClassLabels find_class_labels(const std::map<std::string, std::string>& metadata, const std::string& model_source,
                              const std::filesystem::path& config, int n_classes) {
  if (const auto it = metadata.find("classes"); it != metadata.end()) {
    ClassLabels labels{split_commas(it->second), "__metadata__.classes"};
    check_count(labels.names, n_classes, model_source + ": __metadata__.classes");
    return labels;
  }
  std::error_code ec;
  if (!config.empty() && std::filesystem::is_regular_file(config, ec)) {
    const std::vector<std::uint8_t> bytes = files::read_file(config, 16u << 20);
    std::vector<std::string> names = config_labels(std::string(bytes.begin(), bytes.end()), files::display(config), n_classes);
    if (!names.empty()) return {std::move(names), files::display(config)};
  }
  if (n_classes == 1000) return {imagenet1k_classes(), "ImageNet-1k (built in)"};
  return {};
}

}  // namespace vitattn::model
