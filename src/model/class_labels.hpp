#pragma once
// Names for a classifier's outputs: from the checkpoint's __metadata__ ("classes"), from a
// config.json beside it (Hugging Face id2label, timm label_names), the ImageNet-1k names
// for a 1000-way head, else none (indices are shown).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace vitattn::model {

struct ClassLabels {
  std::vector<std::string> names;  // one per class, or empty: show indices
  std::string source;              // where they came from, for -v

  // names[i], or the index as text when there are no names.
  std::string label(int index) const;
};

// `metadata`: the checkpoint's __metadata__ (`model_source` names it in errors); `config`: a
// config.json to look in, or empty. A list whose length is not n_classes is an error naming
// where it came from. Throws Error.
ClassLabels find_class_labels(const std::map<std::string, std::string>& metadata, const std::string& model_source,
                              const std::filesystem::path& config, int n_classes);

// Labels from a parsed config.json text: id2label {"0": "cat", …} or label_names ["cat", …];
// empty when it has neither. Throws Error naming `source` when they do not fit n_classes.
std::vector<std::string> config_labels(const std::string& json_text, const std::string& source, int n_classes);

// The 1000 ImageNet-1k names (data/imagenet1k_classes.txt, built into the binary).
const std::vector<std::string>& imagenet1k_classes();

}  // namespace vitattn::model
