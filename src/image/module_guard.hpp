#pragma once
// The module side of module_status.hpp: runs a call of a dlopened module's table and turns any
// exception into the status's message and the call's failure value. Only the modules include it
// (it needs OpenCV's exception type).
#include <cstdio>
#include <exception>
#include <opencv2/core.hpp>

#include "image/module_status.hpp"

namespace vitattn::image {

inline void say(ModuleStatus* status, const char* what) {
  std::snprintf(status->message, sizeof status->message, "%s", what);
}

// f's result, or `failed` with the reason in *status when f throws. module: for an exception
// of no known type ("unknown exception in the <module>").
template <class R, class F>
R guarded(ModuleStatus* status, R failed, const char* module, F&& f) {
  try {
    return f();
  } catch (const cv::Exception& e) {
    say(status, e.err.c_str());
  } catch (const std::exception& e) {
    say(status, e.what());
  } catch (...) {
    std::snprintf(status->message, sizeof status->message, "unknown exception in the %s", module);
  }
  return failed;
}

}  // namespace vitattn::image
