#include "map_methods.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace vitattn::pipeline {

const std::vector<MapMethodRow>& map_method_rows() {
  // method, name, aliases, class-specific, needs a classifier, relevance map, report order
  static const std::vector<MapMethodRow> rows{
      {MapMethod::attention, "attention", {"attn"}, false, false, nullptr, -1},
      {MapMethod::rollout, "rollout", {}, false, false, nullptr, -1},
      {MapMethod::chefer, "chefer", {}, true, true, &RelevanceMaps::chefer, 0},
      {MapMethod::grad_rollout, "grad-rollout", {"grad_rollout", "gradrollout"}, true, true,
       &RelevanceMaps::grad_rollout, 1},
      {MapMethod::legrad, "legrad", {}, true, true, &RelevanceMaps::legrad, 2},
      {MapMethod::gradcam, "gradcam", {"grad-cam", "grad_cam"}, true, true, &RelevanceMaps::gradcam, 3},
      {MapMethod::lrp, "lrp", {}, true, true, &RelevanceMaps::lrp, 4},
  };
  return rows;
}

namespace {

const MapMethodRow& row(MapMethod m) {
  for (const MapMethodRow& r : map_method_rows())
    if (r.method == m) return r;
  throw Error("a map method without a row in the table");  // a caller's bug
}

}  // namespace

const std::vector<MapMethod>& every_method() {
  static const std::vector<MapMethod> all = [] {
    std::vector<MapMethod> out;
    for (const MapMethodRow& r : map_method_rows()) out.push_back(r.method);
    return out;
  }();
  return all;
}

std::string method_name(MapMethod m) { return row(m).name; }

std::optional<MapMethod> method_named(std::string_view name) {
  for (const MapMethodRow& r : map_method_rows())
    if (name == r.name) return r.method;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> method_aliases() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const MapMethodRow& r : map_method_rows())
    for (const char* alias : r.aliases) out.emplace_back(alias, r.name);
  return out;
}

std::string method_names(const std::vector<MapMethod>& methods, std::string_view last_separator) {
  std::string out;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    if (i > 0) out += i + 1 == methods.size() ? std::string(last_separator) : std::string(", ");
    out += method_name(methods[i]);
  }
  return out;
}

bool class_specific(MapMethod m) { return row(m).class_specific; }

std::vector<MapMethod> class_specific_methods() {
  std::vector<MapMethod> out;
  for (const MapMethodRow& r : map_method_rows())
    if (r.class_specific) out.push_back(r.method);
  return out;
}

bool needs_classifier(MapMethod m) { return row(m).needs_classifier; }

RelevanceMap relevance_map(MapMethod m) {
  const MapMethodRow& r = row(m);
  if (r.relevance == nullptr) throw Error(std::string(r.name) + " is not a class-specific method");
  return r.relevance;
}

std::vector<MapMethod> report_methods() {
  std::vector<const MapMethodRow*> in_report;
  for (const MapMethodRow& r : map_method_rows())
    if (r.report_order >= 0) in_report.push_back(&r);
  std::sort(in_report.begin(), in_report.end(),
            [](const MapMethodRow* a, const MapMethodRow* b) { return a->report_order < b->report_order; });
  std::vector<MapMethod> out;
  for (const MapMethodRow* r : in_report) out.push_back(r->method);
  return out;
}

std::string report_start_method(MapMethod m) { return method_name(class_specific(m) ? m : MapMethod::attention); }

}  // namespace vitattn::pipeline
