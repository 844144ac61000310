#pragma once
// The boundary between vitattn and libvitattn_video.so, the module that holds everything that
// needs OpenCV's videoio (FFmpeg, GStreamer, …: about a hundred shared libraries). The binary
// loads it (video_module.cpp) only when a batch has a video, so no other start pays for them.
// Plain C types and cv::Mat (the same libopencv_core on both sides) cross it; no exception
// does: the module catches everything at each function and reports it in a Status, which the
// binary turns into vitattn::Error naming the file.
#include <cstdint>

#include "image/module_status.hpp"

namespace cv {
class Mat;
}

namespace vitattn::video::video_abi {

// Raised whenever Table changes: a module of another version is refused with a clear error.
inline constexpr int kVersion = 1;
inline constexpr const char* kFileName = "libvitattn_video.so";
inline constexpr const char* kEntryPoint = "vitattn_video_module";

// Why a call failed (module_status.hpp).
using Status = image::ModuleStatus;

struct Table {
  int version;  // kVersion; first, so that any module's version can be read
  // An opened video, or nullptr (status: OpenCV's exception text, or empty when it just did not open).
  void* (*reader_open)(const char* path, Status* status);
  // Frame size, stated frame rate and announced frame count (a double as OpenCV gives it).
  void (*reader_info)(void* reader, int* width, int* height, double* fps, double* frame_count);
  // 1: the next frame is in *bgr; 0: the end, or a frame that cannot be decoded.
  int (*reader_read)(void* reader, cv::Mat* bgr);
  void (*reader_close)(void* reader);
  // A writer of `fourcc` ("avc1", "MJPG") to `path`, or nullptr (status as reader_open).
  void* (*writer_open)(const char* path, const char* fourcc, double fps, int width, int height, Status* status);
  int (*writer_write)(void* writer, const cv::Mat* bgr, Status* status);    // 1 written, 0 failed
  int (*writer_finish)(void* writer, Status* status);                       // writes the trailer; 1 ok
  void (*writer_close)(void* writer);
};

}  // namespace vitattn::video::video_abi

// The module's one entry point: its table (static, lives as long as the module).
extern "C" const vitattn::video::video_abi::Table* vitattn_video_module();
