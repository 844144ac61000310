// decode_tool: decodes image files with vitattn's loader (image::decode_image), for the Python
// test that compares the pixels with python3-opencv's cv2.imdecode (tests/oracle/test_decoders.py).
//
//   decode_tool IN OUT.raw
//
// Writes the decoded 8-bit BGR pixels, row by row, to OUT.raw and "WIDTH HEIGHT" on stdout;
// damage warnings on stdout as "warning: …"; an Error as "error: …" on stderr, exit 1.
// Links no imgcodecs: JPEG is decoded here exactly as in vitattn.
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "image/image_loader.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: decode_tool IN OUT.raw\n";
    return 2;
  }
  try {
    vitattn::image::DamagePolicy damage;
    damage.warn = [](const std::string& line) { std::cout << "warning: " << line << "\n"; };
    const cv::Mat bgr = vitattn::image::load_image(argv[1], std::numeric_limits<std::uint32_t>::max(), damage);
    vitattn::files::write_file_atomic(argv[2], bgr.isContinuous() ? bgr.data : bgr.clone().data, bgr.total() * bgr.elemSize());
    std::cout << bgr.cols << " " << bgr.rows << "\n";
  } catch (const vitattn::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
