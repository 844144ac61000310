#pragma once
// Reading a video's frames through OpenCV's FFmpeg backend (Debian's libavcodec): mp4, mov,
// mkv, webm and avi, whatever codecs that FFmpeg decodes. The sound track is not read.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <opencv2/core.hpp>
#include <string>

#include "image/image_loader.hpp"  // roles::pixel_limit

namespace vitattn::video {

// Whether a file name's extension (any case) is a video container vitattn reads.
bool has_video_extension(const std::filesystem::path& path);

// "mp4, mov, mkv, webm, avi", for messages and help.
std::string video_extension_list();

// FFmpeg prints what it finds wrong in a file on stderr, around vitattn's own one-line
// messages. The program turns that off through OpenCV's environment before any thread starts
// (src/cli: the environment is the command line's to read and to set).

struct VideoInfo {
  int width = 0, height = 0;
  double fps = 0;              // frames per second the container states
  std::int64_t frame_count = 0;  // frames the container announces (may be an estimate, or 0)
};

class VideoReader {
 public:
  // Opens `path`; throws Error "PATH: …" when FFmpeg cannot open or decode it (not a video, an
  // unsupported codec, a broken container), and Error about roles::pixel_limit when a frame
  // has more than `max_pixels` pixels. No frame is decoded yet.
  VideoReader(const std::filesystem::path& path, std::uint64_t max_pixels);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  const VideoInfo& info() const { return info_; }

  // The next frame as 8-bit BGR (height, width); false at the end of the stream or at the first
  // frame that cannot be decoded (a truncated or corrupt file ends there).
  bool read(cv::Mat& bgr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  VideoInfo info_;
  std::string source_;
};

}  // namespace vitattn::video
