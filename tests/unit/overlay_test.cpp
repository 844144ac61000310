// Rendering: the overlay has the original image's size and blends as documented.
#include "image/overlay.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

namespace vitattn::image {
namespace {

TEST(Overlay, KeepsTheOriginalSizeForEveryInterpolation) {
  const cv::Mat img(301, 451, CV_8UC3, cv::Scalar(10, 20, 30));
  Matrix map(14, 14);
  for (Eigen::Index i = 0; i < map.size(); ++i) map.data()[i] = static_cast<float>(i % 7);
  for (Interp interp : {Interp::nearest, Interp::linear, Interp::cubic}) {
    const cv::Mat out = render_overlay(img, map, RenderOptions{interp, cv::COLORMAP_JET, 0.5});
    EXPECT_EQ(out.size(), img.size());
    EXPECT_EQ(out.type(), CV_8UC3);
  }
}

// lrp's signed map: over the largest |value|, blue for negative, white at 0, red for positive
// (BGR), the other two channels faded by 1 − |v|. At the image's own size nothing is resampled.
TEST(Overlay, ASignedMapIsBlueWhiteRed) {
  const cv::Mat bgr(1, 3, CV_8UC3, cv::Scalar(10, 20, 30));
  Matrix values(1, 3);
  values << -2.0f, 0.0f, 4.0f;  // → −0.5, 0, 1
  const cv::Mat heat = render_signed_overlay(bgr, values, 1.0);
  EXPECT_EQ(heat.at<cv::Vec3b>(0, 0), cv::Vec3b(255, 128, 128));
  EXPECT_EQ(heat.at<cv::Vec3b>(0, 1), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(heat.at<cv::Vec3b>(0, 2), cv::Vec3b(0, 0, 255));
  const cv::Mat none = render_signed_overlay(bgr, values, 0.0);
  EXPECT_EQ(none.at<cv::Vec3b>(0, 2), cv::Vec3b(10, 20, 30));
  const cv::Mat zeros = render_signed_overlay(bgr, Matrix::Zero(1, 3), 1.0);  // no peak: white
  EXPECT_EQ(zeros.at<cv::Vec3b>(0, 0), cv::Vec3b(255, 255, 255));
}

TEST(Overlay, AlphaZeroIsTheImageAndAlphaOneIsTheHeatmap) {
  cv::Mat img(20, 30, CV_8UC3);
  cv::randu(img, 0, 256);
  Matrix map(2, 2);
  map << 0, 1, 2, 3;
  EXPECT_EQ(cv::norm(render_overlay(img, map, {Interp::nearest, cv::COLORMAP_JET, 0.0}), img, cv::NORM_INF), 0.0);
  const cv::Mat heat = render_overlay(img, map, {Interp::nearest, cv::COLORMAP_JET, 1.0});
  // Nearest upsampling of a 2×2 map: the top-left quarter has the colour of the minimum (0).
  cv::Mat lowest(1, 1, CV_8U, cv::Scalar(0)), colour;
  cv::applyColorMap(lowest, colour, cv::COLORMAP_JET);
  EXPECT_EQ(heat.at<cv::Vec3b>(0, 0), colour.at<cv::Vec3b>(0, 0));
  cv::Mat highest(1, 1, CV_8U, cv::Scalar(255));
  cv::applyColorMap(highest, colour, cv::COLORMAP_JET);
  EXPECT_EQ(heat.at<cv::Vec3b>(19, 29), colour.at<cv::Vec3b>(0, 0));
}

TEST(Overlay, ColormapsByName) {
  EXPECT_EQ(colormap_by_name("jet"), cv::COLORMAP_JET);
  EXPECT_EQ(colormap_by_name("Inferno"), cv::COLORMAP_INFERNO);
  EXPECT_EQ(colormap_by_name("turbo"), cv::COLORMAP_TURBO);
  EXPECT_FALSE(colormap_by_name("nope").has_value());
}

}  // namespace
}  // namespace vitattn::image
