#pragma once
// How a report page opens, the same whichever front end asks for it (the image command, serve's
// report): the view it starts on and the classes its picker lists.
#include <optional>

#include "process_image.hpp"
#include "report/report_page.hpp"
#include "view.hpp"

namespace vitattn::pipeline {

// The classes the picker lists when the request names no number of top classes.
inline constexpr int kReportPickerClasses = 3;

// The page's first view for `view`: its layer; its head, or the mean when every head is drawn
// (the page shows one map); rollout when that is the one method; the class-specific method
// when that is the one method (else attention). The rest of ReportStart keeps its defaults.
report::ReportStart report_start(const EncoderView& view);

// The page's class picker: the `top` most likely classes, else kReportPickerClasses, named by `labels`.
TopRequest report_class_picker(std::optional<int> top, model::ClassLabels labels);

}  // namespace vitattn::pipeline
