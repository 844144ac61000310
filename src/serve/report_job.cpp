#include "report_job.hpp"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "image/image_loader.hpp"
#include "pipeline/map_methods.hpp"
#include "pipeline/process_image.hpp"
#include "pipeline/report_start.hpp"
#include "pipeline/words_part.hpp"
#include "pipeline/zero_shot_texts.hpp"

namespace vitattn::serve {
namespace {

std::string sha256_hex(const void* data, std::size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data, size, digest, &n, EVP_sha256(), nullptr) != 1) throw Error("report: SHA-256 failed");
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// text=: the served model with the prompts as its classes (pipeline/zero_shot_texts.hpp, as the
// CLI's --text), named by them, and the words request of the page's Prompts panel (its word
// bars from the last text layer, as words.csv's default). Throws the CLI's Error for a prompt
// it refuses, naming the parameter; a model without a text tower is refused too.
ServedModel asked_in_words(const ServedModel& served, const MapQuery& query,
                           std::shared_ptr<const pipeline::WordsRequest>& words) {
  if (!served.texts) throw Error(fmt::format("text: {} has no text tower (CLIP's or SigLIP's) to read prompts with", served.name));
  const ServedTexts& t = *served.texts;
  const ServedTexts::Rows ids = t.ids(query.texts, query.truncate);
  ServedModel asked = served;
  asked.model.zero_shot = pipeline::zero_shot_head(*t.tower, ids, t.legrad_empty);
  asked.labels = model::ClassLabels{query.texts, "text"};
  words = std::make_shared<const pipeline::WordsRequest>(pipeline::text_words(*t.tower, ids, t.words(ids), -1, t.view(ids)));
  return asked;
}

}  // namespace

pipeline::ProcessOptions report_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels) {
  pipeline::ProcessOptions options = map_options(served, query, max_pixels);
  report::ReportSettings r;  // the page opens as the image command's does (pipeline/report_start.hpp)
  r.start = pipeline::report_start(options.view);
  r.start.layer = query.layer;  // as asked, as the CLI's page starts (map_options resolved the view's)
  options.report = r;
  if (query.top && !served.model.has_classifier())
    throw Error(fmt::format("top={}: {} has no classifier, so no classes to list", *query.top, served.name));
  options.report_classes = pipeline::report_class_picker(query.top, served.labels);
  if (query.pca) options.pca.emplace();  // the CLI's --pca with --pca-fit image: the image's own fit
  return options;
}

std::string compute_report(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                           const MapQuery& query, std::uint64_t max_pixels) {
  if (!query.texts.empty()) {  // the prompts are the classes; the picker lists every one unless top= says
    std::shared_ptr<const pipeline::WordsRequest> words;
    const ServedModel asked = asked_in_words(served, query, words);
    MapQuery q = query;  // no method named: the CLI's for texts, which the page opens on
    if (!q.method_given) q.method = pipeline::kTextsMethod;
    pipeline::ProcessOptions options = report_options(asked, q, max_pixels);
    options.view.chefer_from = pipeline::kTextsCheferFrom;  // as the CLI's --text: the notebook's start
    options.words = words;
    options.report_classes = pipeline::report_class_picker(query.top.value_or(static_cast<int>(query.texts.size())), asked.labels);
    const cv::Mat bgr = image::decode_image(image, source, options.max_pixels, options.damage);  // (H, W) 8-bit
    return pipeline::report_page(bgr, query.name, source, asked.model, options);
  }
  const pipeline::ProcessOptions options = report_options(served, query, max_pixels);
  const cv::Mat bgr = image::decode_image(image, source, options.max_pixels, options.damage);  // (H, W) 8-bit
  return pipeline::report_page(bgr, query.name, source, served.model, options);
}

std::string report_id(const std::vector<std::uint8_t>& image, const MapQuery& query) {
  std::string key = sha256_hex(image.data(), image.size());
  key += '\n';
  key += report_key(query);
  return sha256_hex(key.data(), key.size());
}

}  // namespace vitattn::serve
