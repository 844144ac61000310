// Decoding: header sizes read without decoding, and clear refusals of bad files.
#include "image/image_loader.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.hpp"
#include "image/image_formats.hpp"
#include "image/image_header.hpp"

namespace vitattn::image {
namespace {

std::vector<std::uint8_t> encode(const cv::Mat& img, const std::string& ext) {
  std::vector<std::uint8_t> buf;
  EXPECT_TRUE(cv::imencode(ext, img, buf)) << ext;
  return buf;
}

std::string error_of(const std::vector<std::uint8_t>& bytes, std::uint64_t max_pixels = 100'000'000) {
  try {
    decode_image(bytes, "in.img", max_pixels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ImageHeader, ReadsTheSizeOfEveryCommonFormat) {
  const cv::Mat img(37, 53, CV_8UC3, cv::Scalar(1, 2, 3));
  for (const char* ext : {".png", ".jpg", ".bmp", ".webp", ".tiff", ".ppm"}) {
    const auto size = read_image_size(encode(img, ext));
    ASSERT_TRUE(size.has_value()) << ext;
    EXPECT_EQ(size->width, 53u) << ext;
    EXPECT_EQ(size->height, 37u) << ext;
  }
  const cv::Mat grey(5, 9, CV_8U, cv::Scalar(7));
  const auto pgm = read_image_size(encode(grey, ".pgm"));
  ASSERT_TRUE(pgm.has_value());
  EXPECT_EQ(pgm->width, 9u);
  EXPECT_FALSE(read_image_size(std::vector<std::uint8_t>{'h', 'e', 'l', 'l', 'o'}).has_value());
}

TEST(ImageHeader, ReadsTheSizeOfTheOtherFormatsOpenCVDecodes) {
  // Without these, --max-pixels could only be checked after OpenCV had allocated the image.
  const cv::Mat img(37, 53, CV_8UC3, cv::Scalar(1, 2, 3));
  cv::Mat f;
  img.convertTo(f, CV_32FC3, 1 / 255.0);
  const cv::Mat big(40, 33, CV_8UC3, cv::Scalar(9, 8, 7));  // OpenJPEG wants at least 32 px
  const std::pair<const char*, cv::Mat> cases[] = {
      {".pam", img}, {".ras", img}, {".pfm", f}, {".hdr", f}, {".jp2", big}};
  for (const auto& [ext, m] : cases) {
    const auto size = read_image_size(encode(m, ext));
    ASSERT_TRUE(size.has_value()) << ext;
    EXPECT_EQ(size->width, static_cast<std::uint64_t>(m.cols)) << ext;
    EXPECT_EQ(size->height, static_cast<std::uint64_t>(m.rows)) << ext;
  }
  // A few bytes claiming 30000x30000 are refused from the header, before OpenCV allocates.
  const std::string huge[] = {
      "PF\n30000 30000\n-1.0\n",
      "PF\n30000PPPP 30000\n.-01\n",  // found by image_fuzzer: OpenCV reads the width with atoi
      "P7\nWIDTH 30000\nHEIGHT 30000\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n",
      std::string("\x59\xA6\x6A\x95\0\0\x75\x30\0\0\x75\x30\0\0\0\x18\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\0", 32),
      "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 30000 +X 30000\n",
      std::string("\xFF\x4F\xFF\x51\0\x29\0\0\0\0\x75\x30\0\0\x75\x30\0\0\0\0\0\0\0\0", 24),
  };
  for (const auto& h : huge) {
    const std::string msg = error_of(std::vector<std::uint8_t>(h.begin(), h.end()));
    EXPECT_NE(msg.find("image is 30000x30000 (900.0 MP), over the pixel limit"), std::string::npos)
        << h.substr(0, 2) << ": " << msg;
  }
  // PNM sides of 2^32 each: the pixel count saturates instead of wrapping to 0.
  const std::string pnm = "P6 4294967296 4294967296 255\n";
  const auto size = read_image_size(std::vector<std::uint8_t>(pnm.begin(), pnm.end()));
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(pixel_count(*size), UINT64_MAX);
  EXPECT_NE(error_of(std::vector<std::uint8_t>(pnm.begin(), pnm.end())).find("over the pixel limit"), std::string::npos);
}

TEST(ImageLoader, GreyPfmBecomes8BitBgr) {
  // Found by image_fuzzer: OpenCV 4.6 decodes a grey PFM ("Pf") to one channel despite
  // IMREAD_COLOR, and preprocess then failed an assertion.
  const cv::Mat grey(6, 5, CV_32FC1, cv::Scalar(200));  // OpenCV converts PFM floats to 8 bits unscaled
  const cv::Mat bgr = decode_image(encode(grey, ".pfm"), "g.pfm", 1000);
  EXPECT_EQ(bgr.type(), CV_8UC3);
  EXPECT_EQ(bgr.size(), cv::Size(5, 6));
  EXPECT_EQ(bgr.at<cv::Vec3b>(2, 3), cv::Vec3b(200, 200, 200));
}

TEST(ImageLoader, FormatsWhoseSizeIsNotReadAreNotDecoded) {
  // Found by image_fuzzer: "DICM" at byte 128 sends the bytes to GDCM, which aborts the process
  // on this one (an assertion in gdcm::Reader). Only formats whose header was read are decoded.
  std::vector<std::uint8_t> dicom(128, 'x');
  for (const char c : std::string("DICM")) dicom.push_back(static_cast<std::uint8_t>(c));
  EXPECT_EQ(error_of(dicom).rfind("in.img: format not supported (DICOM; vitattn reads JPEG, PNG, ", 0), 0u);
  std::string nitf_header = "NITF02.10";
  nitf_header.resize(400, ' ');
  const std::vector<std::uint8_t> nitf(nitf_header.begin(), nitf_header.end());
  EXPECT_EQ(error_of(nitf).rfind("in.img: format not supported (NITF; ", 0), 0u);
}

TEST(ImageFormats, EveryReadableFormatIsNamedAlikeByItsExtensionAndItsBytesAndIsSized) {
  // The folder scan goes by extension, the decoder by signature: for every format OpenCV can
  // write, both must name the same table entry, and the header reader must size it.
  const cv::Mat img(64, 96, CV_8UC3, cv::Scalar(10, 120, 230));
  cv::Mat as_float, grey;
  img.convertTo(as_float, CV_32FC3, 1.0 / 255);
  cv::cvtColor(img, grey, cv::COLOR_BGR2GRAY);
  for (const char* ext : {"jpg", "jpeg", "jpe", "png", "bmp", "dib", "webp", "tif", "tiff", "pbm", "pgm", "ppm", "pnm",
                          "pam", "pfm", "sr", "ras", "hdr", "pic", "jp2"}) {
    const std::string dotted = std::string(".") + ext;
    const bool is_float = dotted == ".pfm" || dotted == ".hdr" || dotted == ".pic";
    const auto bytes = encode(is_float ? as_float : dotted == ".pbm" || dotted == ".pgm" ? grey : img, dotted);
    const ImageFormat* by_name = format_by_extension(std::string("x.") + ext);
    ASSERT_NE(by_name, nullptr) << ext;
    EXPECT_TRUE(by_name->readable) << ext;
    EXPECT_EQ(format_by_signature(bytes), by_name) << ext;
    const auto size = read_image_size(bytes);
    ASSERT_TRUE(size.has_value()) << ext;
    EXPECT_EQ(size->width, 96u) << ext;
    EXPECT_EQ(error_of(bytes), "") << ext;
  }
  EXPECT_EQ(format_by_extension("X.JPG"), format_by_extension("x.jpg"));
  EXPECT_EQ(format_by_extension("notes.txt"), nullptr);
  for (const char* refused : {"a.exr", "a.gif", "a.heic", "a.dcm"}) {
    ASSERT_NE(format_by_extension(refused), nullptr) << refused;
    EXPECT_FALSE(format_by_extension(refused)->readable) << refused;
  }
}

TEST(ImageHeader, RefusesAHugeImageBeforeDecoding) {
  // A PNG that claims 60000×60000 in its header and holds nothing else.
  auto png = encode(cv::Mat(1, 1, CV_8UC3), ".png");
  const std::uint8_t size[8] = {0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60};
  std::memcpy(png.data() + 16, size, 8);
  const std::string msg = error_of(png);
  EXPECT_NE(msg.find("image is 60000x60000 (3600.0 MP), over the pixel limit of 100.0 MP"), std::string::npos)
      << msg;
  EXPECT_NE(error_of(encode(cv::Mat(30, 40, CV_8UC3), ".jpg"), 1000).find("over the pixel limit"), std::string::npos);
}

TEST(ImageLoader, ClearErrorsForEmptyGarbageAndTruncatedFiles) {
  EXPECT_EQ(error_of({}), "in.img: file is empty (0 bytes)");
  EXPECT_EQ(error_of({'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'}),
            "in.img: not a readable image (unknown format or corrupt data)");
  cv::Mat img(64, 64, CV_8UC3);
  cv::randu(img, 0, 256);
  auto jpg = encode(img, ".jpg");
  EXPECT_EQ(error_of(jpg), "");
  jpg.resize(jpg.size() / 2);
  EXPECT_EQ(error_of(jpg), "in.img: JPEG data is truncated (no end-of-image marker)");
  EXPECT_EQ(error_of({0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 0x12}), "in.img: corrupt JPEG (no image data found)");
  auto png = encode(img, ".png");
  png.resize(png.size() / 2);
  EXPECT_EQ(error_of(png), "in.img: PNG data is truncated (no IEND chunk)");
}

TEST(ImageLoader, GreyRgbaAnd16BitBecome8BitBgr) {
  const cv::Mat grey(10, 12, CV_8U, cv::Scalar(77));
  const cv::Mat rgba(10, 12, CV_8UC4, cv::Scalar(1, 2, 3, 4));
  const cv::Mat deep(10, 12, CV_16UC3, cv::Scalar(256 * 200, 0, 65535));
  for (const auto& [img, ext] : {std::pair{grey, ".png"}, {rgba, ".png"}, {deep, ".png"}, {deep, ".tiff"}}) {
    const cv::Mat out = decode_image(encode(img, ext), "x", 1'000'000);
    EXPECT_EQ(out.type(), CV_8UC3);
    EXPECT_EQ(out.size(), cv::Size(12, 10));
  }
  EXPECT_EQ(decode_image(encode(grey, ".png"), "x", 1000).at<cv::Vec3b>(3, 3), cv::Vec3b(77, 77, 77));
  EXPECT_EQ(decode_image(encode(deep, ".png"), "x", 1000).at<cv::Vec3b>(3, 3), cv::Vec3b(200, 0, 255));
}

TEST(Preprocess, ResizeRuleAndNormalisation) {
  cv::Mat img(300, 451, CV_8UC3);
  cv::randu(img, 0, 256);
  const Normalization norm{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};
  const ImageTensor t = preprocess(img, 224, norm);
  cv::Mat expected;
  cv::resize(img, expected, cv::Size(224, 224), 0, 0, cv::INTER_AREA);
  const cv::Vec3b bgr = expected.at<cv::Vec3b>(10, 20);
  EXPECT_FLOAT_EQ(t.at(0, 10, 20), (bgr[2] / 255.0f - 0.5f) / 0.5f);  // channel 0 is red
  EXPECT_FLOAT_EQ(t.at(2, 10, 20), (bgr[0] / 255.0f - 0.5f) / 0.5f);

  const cv::Mat small(5, 300, CV_8UC3, cv::Scalar(0, 0, 255));  // narrower than S on one axis: linear
  cv::Mat up;
  cv::resize(small, up, cv::Size(224, 224), 0, 0, cv::INTER_LINEAR);
  const ImageTensor ts = preprocess(small, 224, norm);
  EXPECT_FLOAT_EQ(ts.at(0, 100, 100), (up.at<cv::Vec3b>(100, 100)[2] / 255.0f - 0.5f) / 0.5f);
}

}  // namespace
}  // namespace vitattn::image
