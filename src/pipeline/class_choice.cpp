#include "class_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "core/error.hpp"
#include "files/text.hpp"
#include "view.hpp"

namespace vitattn::pipeline {
namespace {

constexpr const char* kSpace = " \t\n\r\f\v";

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) + 1 - first);
}

// "a, b ,c" → {"a", "b", "c"}: split on every comma, each piece trimmed (an empty piece kept).
std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    items.push_back(trimmed(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

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

// The labels' indices for which `matches(label)` holds.
std::vector<int> matching(const std::vector<std::string>& labels, const std::function<bool(const std::string&)>& matches) {
  std::vector<int> found;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (matches(labels[i])) found.push_back(static_cast<int>(i));
  return found;
}

bool has_synonym(const std::string& label, const std::function<bool(const std::string&)>& matches) {
  const std::vector<std::string> synonyms = comma_items(label);
  return std::any_of(synonyms.begin(), synonyms.end(), matches);
}

// The tiers a label is looked up in, in order; each says what its matches have in common. The
// letters as typed come first, a label whole or one of its names ("Cardigan" is the corgi of
// "Cardigan, Cardigan Welsh corgi" before it is the sweater "cardigan" in another case).
struct Tier {
  const char* what;  // "… classes of M {what}"
  std::function<bool(const std::string& label, const std::string& text)> matches;
};

const std::vector<Tier>& label_tiers() {
  static const std::vector<Tier> tiers{
      {"have this label", [](const std::string& label, const std::string& text) { return label == text; }},
      {"have it among their names",
       [](const std::string& label, const std::string& text) {
         return has_synonym(label, [&](const std::string& s) { return s == text; });
       }},
      {"have this label in some case",
       [](const std::string& label, const std::string& text) { return files::lower_case(label) == files::lower_case(text); }},
      {"have it among their names in some case",
       [](const std::string& label, const std::string& text) {
         const std::string wanted = files::lower_case(text);
         return has_synonym(label, [&](const std::string& s) { return files::lower_case(s) == wanted; });
       }}};
  return tiers;
}

ChosenClass chosen(const model::ClassLabels& labels, int index) {
  return {index, labels.names.empty() ? std::string() : labels.names[static_cast<std::size_t>(index)]};
}

std::string listed(const model::ClassLabels& labels, const std::vector<int>& indices) {
  std::vector<ChosenClass> classes;
  for (int i : indices) classes.push_back(chosen(labels, i));
  return class_names(classes);
}

// The one class of `found`, the matches of a tier for `text`; two or more are ambiguous.
ChosenClass the_one(const std::vector<int>& found, const char* what, const std::string& text, const model::ClassLabels& labels,
                    const std::string& model) {
  if (found.size() > 1)
    throw Error({roles::class_choice, text}, fmt::format("ambiguous: {} classes of {} {}: {}; give one by its index",
                                                         found.size(), model, what, listed(labels, found)));
  return chosen(labels, found.front());
}

// The class of one item: an index, or a label by the first tier that names any class.
ChosenClass resolve_item(const std::string& text, const model::ClassLabels& labels, int n_classes, const std::string& model) {
  if (text.empty()) throw Error({roles::class_choice, ""}, "an empty class in the list");
  if (is_index(text)) {
    const int index = std::stoi(text);
    if (index >= n_classes) throw Error({roles::class_choice, text}, fmt::format("{} has classes 0…{}", model, n_classes - 1));
    return chosen(labels, index);
  }
  if (labels.names.empty())
    throw Error({roles::class_choice, text},
                fmt::format("{} has no class names; give a class index 0…{}", model, n_classes - 1));
  for (const Tier& tier : label_tiers()) {
    const std::vector<int> found =
        matching(labels.names, [&](const std::string& label) { return tier.matches(label, text); });
    if (!found.empty()) return the_one(found, tier.what, text, labels, model);
  }
  throw Error({roles::class_choice, text}, fmt::format("no class of {} has this label; the closest: {}", model,
                                                       listed(labels, closest_labels(text, labels.names))));
}

// The classes of one value: the whole of it as one label with commas (step 1), else its items.
std::vector<ChosenClass> resolve_value(const std::string& value, const model::ClassLabels& labels, int n_classes,
                                       const std::string& model) {
  const std::string whole = trimmed(value);
  if (whole.find(',') != std::string::npos) {
    const std::vector<int> found = matching(labels.names, [&](const std::string& label) { return label == whole; });
    if (!found.empty()) return {the_one(found, label_tiers().front().what, whole, labels, model)};
  }
  std::vector<ChosenClass> classes;
  for (const std::string& item : comma_items(value)) classes.push_back(resolve_item(item, labels, n_classes, model));
  return classes;
}

}  // namespace

std::string class_name(const ChosenClass& c) {
  return c.label.empty() ? std::to_string(c.index) : fmt::format("\"{}\" ({})", c.label, c.index);
}

std::string class_names(const std::vector<ChosenClass>& classes) {
  std::string out;
  for (const ChosenClass& c : classes) out += (out.empty() ? "" : ", ") + class_name(c);
  return out;
}

std::vector<int> closest_labels(const std::string& text, const std::vector<std::string>& labels, std::size_t n) {
  const std::string wanted = files::lower_case(trimmed(text));
  std::vector<std::pair<std::size_t, int>> ranked;  // (distance, index)
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::size_t best = edit_distance(wanted, files::lower_case(labels[i]));
    for (const std::string& synonym : comma_items(labels[i])) best = std::min(best, edit_distance(wanted, files::lower_case(synonym)));
    ranked.emplace_back(best, static_cast<int>(i));
  }
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<int> out;
  for (std::size_t k = 0; k < std::min(n, ranked.size()); ++k) out.push_back(ranked[k].second);
  return out;
}

std::vector<ChosenClass> resolve_classes(const std::vector<std::string>& values, const model::ClassLabels& labels,
                                         int n_classes, const std::string& model) {
  std::vector<ChosenClass> classes;
  for (const std::string& value : values) {
    if (n_classes <= 0) throw Error({roles::class_choice, trimmed(value)}, model + " has no classifier, so no classes");
    for (const ChosenClass& c : resolve_value(value, labels, n_classes, model)) {
      for (const ChosenClass& other : classes)
        if (other.index == c.index)
          throw Error({roles::class_choice, trimmed(value)}, fmt::format("class {} is given twice", class_name(c)));
      classes.push_back(c);
    }
  }
  return classes;
}

}  // namespace vitattn::pipeline
