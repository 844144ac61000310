// libvitattn_video.so: cv::VideoCapture and cv::VideoWriter behind the plain table of
// video_module_abi.hpp. Only this file links opencv_videoio. No exception leaves it: each
// function catches at the boundary and says why in a Status (the module has no vitattn::Error
// of its own, so no type has to match across the dlopen).
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

#include "image/module_guard.hpp"
#include "video/video_module_abi.hpp"

namespace {
using vitattn::video::video_abi::Status;
using vitattn::video::video_abi::Table;
using vitattn::image::guarded;

void* reader_open(const char* path, Status* status) {
  return guarded<void*>(status, nullptr, "video module", [&]() -> void* {
    auto capture = std::make_unique<cv::VideoCapture>();
    if (!capture->open(path, cv::CAP_FFMPEG)) return nullptr;
    return capture.release();
  });
}

void reader_info(void* reader, int* width, int* height, double* fps, double* frame_count) {
  auto& capture = *static_cast<cv::VideoCapture*>(reader);
  Status ignored;
  guarded<int>(&ignored, 0, "video module", [&] {
    *width = static_cast<int>(capture.get(cv::CAP_PROP_FRAME_WIDTH));
    *height = static_cast<int>(capture.get(cv::CAP_PROP_FRAME_HEIGHT));
    *fps = capture.get(cv::CAP_PROP_FPS);
    *frame_count = capture.get(cv::CAP_PROP_FRAME_COUNT);
    return 1;
  });
}

int reader_read(void* reader, cv::Mat* bgr) {
  Status ignored;  // a frame FFmpeg cannot decode ends the stream, like a truncated file
  return guarded<int>(&ignored, 0, "video module", [&] { return static_cast<cv::VideoCapture*>(reader)->read(*bgr) ? 1 : 0; });
}

void reader_close(void* reader) {
  Status ignored;
  guarded<int>(&ignored, 0, "video module", [&] {
    delete static_cast<cv::VideoCapture*>(reader);
    return 1;
  });
}

void* writer_open(const char* path, const char* fourcc, double fps, int width, int height, Status* status) {
  return guarded<void*>(status, nullptr, "video module", [&]() -> void* {
    auto writer = std::make_unique<cv::VideoWriter>();
    const int code = cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]);
    if (!writer->open(path, cv::CAP_FFMPEG, code, fps, cv::Size(width, height))) return nullptr;
    return writer.release();
  });
}

int writer_write(void* writer, const cv::Mat* bgr, Status* status) {
  return guarded<int>(status, 0, "video module", [&] {
    static_cast<cv::VideoWriter*>(writer)->write(*bgr);
    return 1;
  });
}

int writer_finish(void* writer, Status* status) {
  return guarded<int>(status, 0, "video module", [&] {
    static_cast<cv::VideoWriter*>(writer)->release();
    return 1;
  });
}

void writer_close(void* writer) {
  Status ignored;
  guarded<int>(&ignored, 0, "video module", [&] {
    delete static_cast<cv::VideoWriter*>(writer);  // an unfinished file is closed here
    return 1;
  });
}

constexpr Table kTable = {vitattn::video::video_abi::kVersion, reader_open, reader_info, reader_read, reader_close,
                          writer_open, writer_write, writer_finish, writer_close};

}  // namespace

extern "C" __attribute__((visibility("default"))) const Table* vitattn_video_module() { return &kTable; }
