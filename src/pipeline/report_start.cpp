#include "report_start.hpp"

#include <utility>

#include "map_methods.hpp"

namespace vitattn::pipeline {

report::ReportStart report_start(const EncoderView& view) {
  report::ReportStart start;
  start.layer = view.layer;
  start.head = view.head == HeadChoice::all ? "mean" : head_text(HeadSpec{view.head, view.head_index, view.fusion});
  const bool one = view.methods.size() == 1;
  start.rollout = one && view.methods.front() == MapMethod::rollout;
  start.method = report_start_method(one ? view.methods.front() : MapMethod::attention);
  return start;
}

TopRequest report_class_picker(std::optional<int> top, model::ClassLabels labels) {
  return TopRequest{top.value_or(kReportPickerClasses), std::move(labels)};
}

}  // namespace vitattn::pipeline
