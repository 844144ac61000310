#include "report_job.hpp"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "image/image_loader.hpp"
#include "pipeline/process_image.hpp"

namespace vitattn::serve {
namespace {

// The page's starting head as the CLI's --head names it.
std::string head_text(const MapQuery& q) {
  if (q.head == pipeline::HeadChoice::index) return std::to_string(q.head_index);
  switch (q.fusion) {
    case HeadFusion::max: return "max";
    case HeadFusion::min: return "min";
    default: return "mean";
  }
}

std::string sha256_hex(const void* data, std::size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data, size, digest, &n, EVP_sha256(), nullptr) != 1) throw Error("report: SHA-256 failed");
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace

pipeline::ProcessOptions report_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels) {
  pipeline::ProcessOptions options = map_options(served, query, max_pixels);
  io::ReportSettings r;  // as the CLI's report_settings (src/cli/app.cpp) for these options
  r.start.layer = query.layer;
  r.start.head = head_text(query);
  r.start.rollout = query.method == pipeline::MapMethod::rollout;
  r.start.method = pipeline::report_start_method(query.method);
  options.report = r;
  if (query.top && !served.model.has_classifier())
    throw Error(fmt::format("top={}: {} has no classifier, so no classes to list", *query.top, served.name));
  options.report_classes = pipeline::TopRequest{query.top.value_or(3), served.labels};  // the CLI's: --top K, else 3
  if (query.pca) options.pca.emplace();  // the CLI's --pca with --pca-fit image: the image's own fit
  return options;
}

std::string compute_report(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                           const MapQuery& query, std::uint64_t max_pixels) {
  const pipeline::ProcessOptions options = report_options(served, query, max_pixels);
  const cv::Mat bgr = io::decode_image(image, source, options.max_pixels, options.damage);  // (H, W) 8-bit
  return pipeline::report_page(bgr, query.name, source, served.model, options);
}

std::string report_id(const std::vector<std::uint8_t>& image, const MapQuery& query) {
  std::string key = sha256_hex(image.data(), image.size());
  key += '\n';
  key += report_key(query);
  return sha256_hex(key.data(), key.size());
}

}  // namespace vitattn::serve
