#include "video/video_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <opencv2/imgproc.hpp>

#include "core/error.hpp"
#include "image/decoder_messages.hpp"
#include "files/file_io.hpp"
#include "video/video_module.hpp"
#include "files/text.hpp"

namespace vitattn::video {
namespace {

constexpr std::array<const char*, 5> kVideoExtensions = {"mp4", "mov", "mkv", "webm", "avi"};

std::string megapixels(std::uint64_t pixels) { return fmt::format("{:.1f} MP", static_cast<double>(pixels) / 1e6); }

}  // namespace

bool has_video_extension(const std::filesystem::path& path) {
  std::string ext = files::lower_extension(path);
  if (ext.size() < 2) return false;
  ext.erase(0, 1);
  return std::find(kVideoExtensions.begin(), kVideoExtensions.end(), ext) != kVideoExtensions.end();
}

std::string video_extension_list() {
  std::string out;
  for (const char* e : kVideoExtensions) out += (out.empty() ? "" : ", ") + std::string(e);
  return out;
}

// An opened capture in the video module (video_module_abi.hpp), closed with the reader.
struct VideoReader::Impl {
  const video_abi::Table& module;
  void* capture = nullptr;
  explicit Impl(const video_abi::Table& m) : module(m) {}
  ~Impl() {
    if (capture != nullptr) module.reader_close(capture);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

VideoReader::VideoReader(const std::filesystem::path& path, std::uint64_t max_pixels) : source_(files::display(path)) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!std::filesystem::exists(path, ec)) throw Error(source_ + ": No such file or directory");
    throw Error(source_ + ": is not a regular file");
  }
  if (std::filesystem::file_size(path, ec) == 0) throw Error(source_ + ": file is empty (0 bytes)");
  impl_ = std::make_unique<Impl>(video_module(source_));
  video_abi::Status status;
  {
    const image::DecoderMessages said;  // OpenCV's own log lines about this file, off stderr
    impl_->capture = impl_->module.reader_open(path.c_str(), &status);
  }
  if (impl_->capture == nullptr && status.message[0] != '\0')
    throw Error(source_ + ": cannot open video: " + status.message);
  if (impl_->capture == nullptr)
    throw Error(source_ + ": cannot open video (not a video, a broken container, or a codec FFmpeg here cannot decode)");
  double count = 0;
  impl_->module.reader_info(impl_->capture, &info_.width, &info_.height, &info_.fps, &count);
  info_.frame_count = std::isfinite(count) && count > 0 ? static_cast<std::int64_t>(count) : 0;
  if (info_.width <= 0 || info_.height <= 0)
    throw Error(fmt::format("{}: video has no frame size ({}x{})", source_, info_.width, info_.height));
  const std::uint64_t pixels = static_cast<std::uint64_t>(info_.width) * static_cast<std::uint64_t>(info_.height);
  if (pixels > max_pixels)
    throw Error({image::roles::pixel_limit, ""},
                      fmt::format("video frames are {}x{} ({}), over the pixel limit of {}", info_.width, info_.height,
                                  megapixels(pixels), megapixels(max_pixels)),
                      source_);
  if (!(info_.fps > 0) || !std::isfinite(info_.fps))
    throw Error(fmt::format("{}: video states no frame rate", source_));
}

VideoReader::~VideoReader() = default;

bool VideoReader::read(cv::Mat& bgr) {
  const image::DecoderMessages said;
  // 0 also for a frame FFmpeg cannot decode: it ends the stream, like a truncated file
  if (impl_->module.reader_read(impl_->capture, &bgr) == 0 || bgr.empty()) return false;
  if (bgr.type() == CV_8UC1) cv::cvtColor(bgr, bgr, cv::COLOR_GRAY2BGR);
  if (bgr.type() != CV_8UC3) return false;
  // A stream whose frames change size is cut where they do: the output video has one size.
  return bgr.cols == info_.width && bgr.rows == info_.height;
}

}  // namespace vitattn::video
