#include "video_writer.hpp"

#include <unistd.h>

#include <mutex>
#include <opencv2/videoio.hpp>

#include "core/error.hpp"
#include "decoder_messages.hpp"
#include "file_io.hpp"
#include "video_reader.hpp"

namespace vitattn::io {
namespace fs = std::filesystem;
namespace {

int fourcc(VideoCodec codec) {
  return codec == VideoCodec::h264_mp4 ? cv::VideoWriter::fourcc('a', 'v', 'c', '1')
                                       : cv::VideoWriter::fourcc('M', 'J', 'P', 'G');
}

bool h264_opens() {
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec);
  if (ec) return false;
  const TemporaryPath scratch(dir / "vitattn-codec-probe.mp4");  // removed when it goes out of scope
  const DecoderMessages said;  // OpenCV's "could not open codec" lines, off stderr
  try {
    cv::VideoWriter probe(scratch.path().string(), cv::CAP_FFMPEG, fourcc(VideoCodec::h264_mp4), 25.0, cv::Size(64, 64));
    return probe.isOpened();
  } catch (const cv::Exception&) {
    return false;
  }
}

}  // namespace

VideoCodec available_video_codec() {
  static std::once_flag once;
  static VideoCodec codec = VideoCodec::mjpg_avi;
  std::call_once(once, [] {
    quiet_video_library();
    if (h264_opens()) codec = VideoCodec::h264_mp4;
  });
  return codec;
}

const char* extension(VideoCodec codec) { return codec == VideoCodec::h264_mp4 ? ".mp4" : ".avi"; }

const char* describe(VideoCodec codec) {
  return codec == VideoCodec::h264_mp4 ? "H.264 in MP4" : "MJPG in AVI (no H.264 encoder in OpenCV's FFmpeg here)";
}

struct VideoWriter::Impl {
  fs::path path;
  TemporaryPath tmp;
  cv::VideoWriter writer;
  cv::Size size;
  explicit Impl(const fs::path& p) : path(p), tmp(p) {}
};

VideoWriter::VideoWriter(const fs::path& path, VideoCodec codec, double fps, int width, int height)
    : impl_(std::make_unique<Impl>(path)) {
  quiet_video_library();
  impl_->size = cv::Size(width, height);
  const DecoderMessages said;
  try {
    impl_->writer.open(impl_->tmp.path().string(), cv::CAP_FFMPEG, fourcc(codec), fps, impl_->size);
  } catch (const cv::Exception& e) {
    throw Error(display(path) + ": cannot write video: " + e.err);
  }
  if (!impl_->writer.isOpened())
    throw Error(display(path) + ": cannot write video (" + describe(codec) + " at " + std::to_string(width) + "x" +
                std::to_string(height) + ")");
}

VideoWriter::~VideoWriter() {
  if (impl_->writer.isOpened()) impl_->writer.release();  // closes the file; ~TemporaryPath removes it
}

void VideoWriter::write(const cv::Mat& bgr) {
  CV_Assert(bgr.type() == CV_8UC3 && bgr.size() == impl_->size);
  impl_->writer.write(bgr);
}

void VideoWriter::commit() {
  impl_->writer.release();  // writes the trailer (the MP4 index)
  std::error_code ec;
  if (fs::file_size(impl_->tmp.path(), ec) == 0 || ec) throw Error(display(impl_->path) + ": cannot write video (nothing written)");
  impl_->tmp.commit();
}

}  // namespace vitattn::io
