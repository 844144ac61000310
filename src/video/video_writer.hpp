#pragma once
// Writing an attention video through OpenCV's VideoWriter: H.264 in MP4 when Debian's FFmpeg
// backend has an H.264 encoder (libx264), else Motion JPEG in AVI. Whole files only: frames go
// to a temporary name that is renamed when the video is complete.
//
// H.264 in 4:2:0 (what OpenCV's FFmpeg backend writes) needs an even width and height; given
// odd ones, FFmpeg would crop the last column or row without a word. The writer pads such a
// video instead by repeating its last column and row (321×239 is written as 322×240), so no
// pixel of the frame is lost, and says so through encoded_size().
#include <filesystem>
#include <memory>
#include <opencv2/core.hpp>
#include <string>

namespace vitattn::video {

enum class VideoCodec { h264_mp4, mjpg_avi };

// Every codec a video can be written with, the preferred first.
inline constexpr VideoCodec kVideoCodecs[] = {VideoCodec::h264_mp4, VideoCodec::mjpg_avi};

// The codec this machine writes: tries to open an H.264 writer once (on a scratch file in the
// system's temporary folder, removed at once) and remembers the answer. Thread-safe.
VideoCodec available_video_codec();

// ".mp4", ".avi": the one place a written video's extension is spelled (the pipeline's output
// names, pipeline/job_outputs.hpp, ask here).
const char* extension(VideoCodec codec);
const char* describe(VideoCodec codec);    // "H.264 in MP4", "MJPG in AVI (no H.264 encoder found)"

class VideoWriter {
 public:
  // Opens a writer for `path` (whose extension must be the codec's) at `fps`, frames (height,
  // width) 8-bit BGR; throws Error naming `path`. Nothing exists under `path` until commit().
  VideoWriter(const std::filesystem::path& path, VideoCodec codec, double fps, int width, int height);
  ~VideoWriter();  // without commit(): the temporary file is removed
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  void write(const cv::Mat& bgr);  // (height, width) as given to the constructor
  cv::Size frame_size() const;     // as given to the constructor
  cv::Size encoded_size() const;   // the size in the file: the frame's, or padded to even (above)
  void commit();  // finishes the file and renames it into place; throws Error naming `path`

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vitattn::video
