// png_encode_tool: encodes raw 8-bit pixels with vitattn's PNG encoder, for the Python test
// that decodes the files with libpng (cv2) and Pillow (tests/oracle/test_png_decoders.py).
//
//   png_encode_tool MANIFEST
//
// Each line of MANIFEST: "IN.raw WIDTH HEIGHT CHANNELS FILTER LEVEL IDAT_BYTES OUT.png", where
// IN.raw holds HEIGHT·WIDTH·CHANNELS bytes in OpenCV's order (grey, BGR or BGRA) and FILTER is
// none|sub|up|paeth|adaptive|default ("default": the options vitattn writes overlays with);
// LEVEL -1 is the own Huffman-only deflate, 0-12 libdeflate.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "image/png_writer.hpp"

int main(int argc, char** argv) {
  using vitattn::image::PngFilter;
  if (argc != 2) {
    std::cerr << "usage: png_encode_tool MANIFEST\n";
    return 2;
  }
  std::ifstream manifest(argv[1]);
  std::string line;
  int written = 0;
  try {
    while (std::getline(manifest, line)) {
      std::istringstream in(line);
      std::string raw, filter, out;
      int w = 0, h = 0, c = 0, level = 0;
      std::size_t idat = 0;
      if (!(in >> raw >> w >> h >> c >> filter >> level >> idat >> out)) throw vitattn::Error("bad line: " + line);
      const std::vector<std::uint8_t> pixels = vitattn::files::read_file(raw);
      if (pixels.size() != static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * static_cast<std::size_t>(c))
        throw vitattn::Error(raw + ": not " + std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c) + " bytes");
      const cv::Mat img(h, w, CV_8UC(c), const_cast<std::uint8_t*>(pixels.data()));
      vitattn::image::PngOptions o;
      if (filter != "default") {
        o.level = level;
        o.idat_bytes = idat;
        o.filter = filter == "none" ? PngFilter::none : filter == "sub" ? PngFilter::sub : filter == "up" ? PngFilter::up
                 : filter == "paeth" ? PngFilter::paeth : filter == "adaptive" ? PngFilter::adaptive
                 : throw vitattn::Error("unknown filter " + filter);
      }
      const std::vector<std::uint8_t> png = vitattn::image::encode_png(img, o);
      vitattn::files::write_file_atomic(out, png.data(), png.size());
      ++written;
    }
  } catch (const vitattn::Error& e) {
    std::cerr << "png_encode_tool: " << e.what() << "\n";
    return 1;
  }
  std::printf("png_encode_tool: %d files written\n", written);
  return 0;
}
