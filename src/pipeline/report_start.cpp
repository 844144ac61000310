#include "report_start.hpp"

#include <utility>

namespace vitattn::pipeline {

io::ReportStart report_start(const EncoderView& view) {
  io::ReportStart start;
  start.layer = view.layer;
  start.head = view.head == HeadChoice::all ? "mean" : head_text(HeadSpec{view.head, view.head_index, view.fusion});
  const bool one = view.methods.size() == 1;
  start.rollout = one && view.methods.front() == MapMethod::rollout;
  if (one && class_specific(view.methods.front())) start.method = method_name(view.methods.front());
  return start;
}

TopRequest report_class_picker(std::optional<int> top, io::ClassLabels labels) {
  return TopRequest{top.value_or(kReportPickerClasses), std::move(labels)};
}

}  // namespace vitattn::pipeline
