#include "video/video_writer.hpp"

#include <unistd.h>

#include <mutex>

#include "core/error.hpp"
#include "image/decoder_messages.hpp"
#include "files/file_io.hpp"
#include "video/video_module.hpp"
#include "video/video_reader.hpp"

namespace vitattn::video {
namespace fs = std::filesystem;
namespace {

const char* fourcc(VideoCodec codec) { return codec == VideoCodec::h264_mp4 ? "avc1" : "MJPG"; }

bool h264_opens() {
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec);
  if (ec) return false;
  // removed when it goes out of scope
  const files::TemporaryPath scratch(dir / (std::string("vitattn-codec-probe") + extension(VideoCodec::h264_mp4)));
  const video_abi::Table& module = video_module();
  const image::DecoderMessages said;  // OpenCV's "could not open codec" lines, off stderr
  video_abi::Status status;
  void* probe = module.writer_open(scratch.path().c_str(), fourcc(VideoCodec::h264_mp4), 25.0, 64, 64, &status);
  if (probe == nullptr) return false;
  module.writer_close(probe);
  return true;
}

}  // namespace

VideoCodec available_video_codec() {
  static std::once_flag once;
  static VideoCodec codec = VideoCodec::mjpg_avi;
  std::call_once(once, [] {
    try {
      if (h264_opens()) codec = VideoCodec::h264_mp4;
    } catch (const Error&) {
      // No video module: each video says so when it is read; the codec does not matter then.
    }
  });
  return codec;
}

const char* extension(VideoCodec codec) { return codec == VideoCodec::h264_mp4 ? ".mp4" : ".avi"; }

const char* describe(VideoCodec codec) {
  return codec == VideoCodec::h264_mp4 ? "H.264 in MP4" : "MJPG in AVI (no H.264 encoder in OpenCV's FFmpeg here)";
}

// An open writer in the video module (video_module_abi.hpp) on the temporary name.
struct VideoWriter::Impl {
  const video_abi::Table& module;
  fs::path path;
  files::TemporaryPath tmp;
  void* writer = nullptr;
  int width = 0, height = 0;              // the frames' size
  int encoded_width = 0, encoded_height = 0;  // the file's: padded to even for H.264
  cv::Mat padded;                             // the frame with its last column and row repeated
  Impl(const video_abi::Table& m, const fs::path& p) : module(m), path(p), tmp(p) {}
  ~Impl() {
    if (writer != nullptr) module.writer_close(writer);  // closes the file; ~TemporaryPath removes it
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

VideoWriter::VideoWriter(const fs::path& path, VideoCodec codec, double fps, int width, int height)
    : impl_(std::make_unique<Impl>(video_module(files::display(path)), path)) {
  impl_->width = width;
  impl_->height = height;
  const bool even_only = codec == VideoCodec::h264_mp4;
  impl_->encoded_width = even_only ? width + (width & 1) : width;
  impl_->encoded_height = even_only ? height + (height & 1) : height;
  video_abi::Status status;
  {
    const image::DecoderMessages said;
    impl_->writer = impl_->module.writer_open(impl_->tmp.path().c_str(), fourcc(codec), fps, impl_->encoded_width,
                                             impl_->encoded_height, &status);
  }
  if (impl_->writer == nullptr && status.message[0] != '\0')
    throw Error(files::display(path) + ": cannot write video: " + status.message);
  if (impl_->writer == nullptr)
    throw Error(files::display(path) + ": cannot write video (" + describe(codec) + " at " + std::to_string(width) + "x" +
                std::to_string(height) + ")");
}

VideoWriter::~VideoWriter() = default;

void VideoWriter::write(const cv::Mat& bgr) {
  CV_Assert(bgr.type() == CV_8UC3 && bgr.cols == impl_->width && bgr.rows == impl_->height);
  const cv::Mat* frame = &bgr;
  if (impl_->encoded_width != impl_->width || impl_->encoded_height != impl_->height) {
    cv::copyMakeBorder(bgr, impl_->padded, 0, impl_->encoded_height - impl_->height, 0, impl_->encoded_width - impl_->width,
                       cv::BORDER_REPLICATE);
    frame = &impl_->padded;
  }
  video_abi::Status status;
  if (impl_->module.writer_write(impl_->writer, frame, &status) == 0)
    throw Error(files::display(impl_->path) + ": cannot write video: " + status.message);
}

cv::Size VideoWriter::frame_size() const { return {impl_->width, impl_->height}; }
cv::Size VideoWriter::encoded_size() const { return {impl_->encoded_width, impl_->encoded_height}; }

void VideoWriter::commit() {
  video_abi::Status status;  // finishing writes the trailer (the MP4 index)
  if (impl_->module.writer_finish(impl_->writer, &status) == 0)
    throw Error(files::display(impl_->path) + ": cannot write video: " + status.message);
  std::error_code ec;
  if (fs::file_size(impl_->tmp.path(), ec) == 0 || ec) throw Error(files::display(impl_->path) + ": cannot write video (nothing written)");
  impl_->tmp.commit();
}

}  // namespace vitattn::video
