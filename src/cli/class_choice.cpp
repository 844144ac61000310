#include "class_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "files/text.hpp"

namespace vitattn::cli {
namespace {

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: optimal string
// alignment distance, two rows at a time.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  std::iota(previous.begin(), previous.end(), std::size_t{0});
  for (std::size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) current[j] = std::min(current[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[m];
}

bool is_index(const std::string& text) {
  return !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
}

// The class of one --class value.
pipeline::ChosenClass resolve_one(const std::string& text, const io::ClassLabels& labels, int n_classes,
                                  const std::string& model) {
  if (is_index(text)) {
    const int index = std::stoi(text);
    if (index >= n_classes) throw Error(fmt::format("--class {}: {} has classes 0…{}", text, model, n_classes - 1));
    return {index, labels.names.empty() ? "" : labels.names[static_cast<std::size_t>(index)]};
  }
  if (labels.names.empty())
    throw Error(fmt::format("--class {}: {} has no class names; give a class index 0…{}", text, model, n_classes - 1));
  const std::string wanted = io::lower_case(text);
  for (std::size_t i = 0; i < labels.names.size(); ++i)
    if (io::lower_case(labels.names[i]) == wanted) return {static_cast<int>(i), labels.names[i]};
  std::string closest;
  for (const std::string& name : closest_names(text, labels.names)) closest += (closest.empty() ? "" : ", ") + name;
  throw Error(fmt::format("--class {}: no class of {} has this label; the closest: {}", text, model, closest));
}

}  // namespace

std::vector<std::string> closest_names(const std::string& text, const std::vector<std::string>& names, std::size_t n) {
  const std::string wanted = io::lower_case(text);
  std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (distance, index)
  for (std::size_t i = 0; i < names.size(); ++i) ranked.emplace_back(edit_distance(wanted, io::lower_case(names[i])), i);
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < std::min(n, ranked.size()); ++k) out.push_back(names[ranked[k].second]);
  return out;
}

std::vector<pipeline::ChosenClass> resolve_classes(const std::vector<std::string>& given, const io::ClassLabels& labels,
                                                   int n_classes, const std::string& model) {
  std::vector<pipeline::ChosenClass> classes;
  for (const std::string& text : given) {
    const pipeline::ChosenClass c = resolve_one(text, labels, n_classes, model);
    for (const pipeline::ChosenClass& other : classes)
      if (other.index == c.index) throw Error(fmt::format("--class {}: class {} is given twice", text, c.index));
    classes.push_back(c);
  }
  return classes;
}

}  // namespace vitattn::cli
