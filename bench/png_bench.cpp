// vitattn_png_bench: PNG encoding speed and size on real overlays: OpenCV's imencode at its
// default (level 1, RLE strategy) and at an explicit level 1, against vitattn's encoder.
// A benchmark helper for bench/run_png_bench.sh, not a test.
//
//   vitattn_png_bench [--repeat N] [--sweep] IMAGE_OR_FOLDER...
//
// Each image is drawn as vitattn draws it by default (seeded head, jet, alpha 0.5). Every
// round encodes the whole set with each encoder in turn, so drift hits all alike; the figure
// is the median round. Prints one JSON object per encoder per line: name, megapixels per
// second (wall and CPU time), total bytes. --sweep adds every filter with the own Huffman-only
// deflate ("level -1") and at libdeflate levels 1–3.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/attention_maps.hpp"
#include "core/vit.hpp"
#include "core/seeded_model.hpp"
#include "image/image_formats.hpp"
#include "image/image_loader.hpp"
#include "image/overlay.hpp"
#include "image/png_writer.hpp"
#include "pipeline/threads.hpp"

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;

struct Encoder {
  std::string name;
  std::function<Bytes(const cv::Mat&)> encode;
};

// This process's CPU seconds: on a shared machine, wall time counts the other jobs too.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "vitattn_png_bench: " << why << "\n"
            << "usage: vitattn_png_bench [--repeat N] [--sweep] IMAGE_OR_FOLDER...\n";
  std::exit(2);
}

Bytes imencode(const cv::Mat& m, const std::vector<int>& params) {
  Bytes out;
  if (!cv::imencode(".png", m, out, params)) throw vitattn::Error("imencode failed");
  return out;
}

std::vector<fs::path> image_files(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file() && vitattn::image::has_image_extension(e.path())) files.push_back(e.path());
    } else {
      files.emplace_back(a);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

const char* filter_name(vitattn::image::PngFilter f) {
  using vitattn::image::PngFilter;
  switch (f) {
    case PngFilter::none: return "none";
    case PngFilter::sub: return "sub";
    case PngFilter::up: return "up";
    case PngFilter::paeth: return "paeth";
    case PngFilter::adaptive: break;
  }
  return "adaptive";
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 7;
  bool sweep = false;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
      if (repeat < 1) usage("--repeat needs a positive integer");
    } else if (a == "--sweep") {
      sweep = true;
    } else if (a.rfind("--", 0) == 0) {
      usage("unknown option " + a);
    } else {
      inputs.push_back(a);
    }
  }
  const std::vector<fs::path> files = image_files(inputs);
  if (files.empty()) usage("no images given");
  vitattn::pipeline::set_library_threads(1);  // one encoder on one core, as each -j worker runs it

  // The overlays, as vitattn draws them by default.
  const vitattn::VitModel model = vitattn::make_seeded_model(vitattn::SeededShape{}, 0);
  const int size = model.grid_h * model.patch_size;
  std::vector<cv::Mat> overlays;
  double megapixels = 0;
  for (const auto& f : files) {
    const cv::Mat bgr = vitattn::image::load_image(f, 100'000'000);
    vitattn::ForwardOptions fo;
    fo.last_layer = 0;  // the attention only, as the image pipeline runs it
    const auto r = vitattn::forward(model, vitattn::image::preprocess(bgr, size, model.norm), fo);
    const vitattn::Matrix map = vitattn::class_token_map(r.attention[0][0], 1, model.grid_h, model.grid_w);
    overlays.push_back(vitattn::image::render_overlay(bgr, map, vitattn::image::RenderOptions{}));
    megapixels += static_cast<double>(bgr.total()) / 1e6;
  }

  std::vector<Encoder> encoders = {
      {"imencode default", [](const cv::Mat& m) { return imencode(m, {}); }},
      {"imencode level 1", [](const cv::Mat& m) { return imencode(m, {cv::IMWRITE_PNG_COMPRESSION, 1}); }},
      {"vitattn", [](const cv::Mat& m) { return vitattn::image::encode_png(m); }},
  };
  if (sweep) {
    using vitattn::image::PngFilter;
    for (PngFilter f : {PngFilter::none, PngFilter::sub, PngFilter::up, PngFilter::paeth, PngFilter::adaptive})
      for (int level : {vitattn::image::PngOptions::kHuffmanOnly, 1, 2, 3}) {
        const vitattn::image::PngOptions o{f, level, std::size_t{1} << 20};
        encoders.push_back({std::string("vitattn ") + filter_name(f) + " level " + std::to_string(level),
                            [o](const cv::Mat& m) { return vitattn::image::encode_png(m, o); }});
      }
  }

  std::vector<std::vector<double>> seconds(encoders.size()), cpu(encoders.size());
  std::vector<std::size_t> bytes(encoders.size(), 0);
  for (int r = 0; r < repeat; ++r) {
    for (std::size_t e = 0; e < encoders.size(); ++e) {
      std::size_t total = 0;
      const auto start = Clock::now();
      const double cpu_start = cpu_seconds();
      for (const cv::Mat& m : overlays) total += encoders[e].encode(m).size();
      cpu[e].push_back(cpu_seconds() - cpu_start);
      seconds[e].push_back(std::chrono::duration<double>(Clock::now() - start).count());
      bytes[e] = total;  // the same every round: every encoder here is deterministic
    }
  }
  std::printf("{\"images\": %zu, \"megapixels\": %.3f, \"repeat\": %d}\n", overlays.size(), megapixels, repeat);
  for (std::size_t e = 0; e < encoders.size(); ++e) {
    const double wall = median(seconds[e]), used = median(cpu[e]);
    std::printf(
        "{\"encoder\": \"%s\", \"median_s\": %.5f, \"mp_per_s\": %.2f, \"median_cpu_s\": %.5f, "
        "\"mp_per_cpu_s\": %.2f, \"bytes\": %zu}\n",
        encoders[e].name.c_str(), wall, megapixels / wall, used, megapixels / used, bytes[e]);
  }
  return 0;
}
