// vitattn_text_bench: CLIP's text tower (core/text_tower.hpp) encoding many prompts, one at a
// time (encode_text) against batches (encode_texts), in the same run, on a random tower of
// ViT-B's text size (width 512, 8 heads, 12 layers, MLP 2048, context 77, embedding 512) and
// random prompts of 6 to 20 tokens between SOT and EOT (ImageNet's 80 templates × 1000 class
// names are of that length). A benchmark helper, not a test.
//
//   vitattn_text_bench [--texts M] [--batch B] [--threads T] [--repeat N] [--warmup W]
//
// Each round encodes the M texts both ways (the order alternating between rounds); prints one
// JSON object with the medians (wall seconds for all M texts), the texts per second, the
// products' GFLOP/s (to set beside bench/fma_peak.cpp's ceiling), and whether the two ways gave
// the same bytes (they must: text_tower.hpp's contract).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/text_tower.hpp"
#include "pipeline/threads.hpp"

namespace {

using vitattn::bench::median;

struct Args {
  int texts = 512;
  int batch = 256;
  int threads = 1;
  int repeat = 5;
  int warmup = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "vitattn_text_bench: " << why << "\n"
            << "usage: vitattn_text_bench [--texts M] [--batch B] [--threads T] [--repeat N] [--warmup W]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    int* target = flag == "--texts" ? &a.texts : flag == "--batch" ? &a.batch : flag == "--threads" ? &a.threads
                : flag == "--repeat" ? &a.repeat : flag == "--warmup" ? &a.warmup : nullptr;
    if (!target) usage("unknown option " + flag);
    const std::optional<int> v = vitattn::bench::parse_int(value, flag == "--warmup" ? 0 : 1);
    if (!v) usage(flag + " needs a positive integer");
    *target = *v;
  }
  return a;
}

constexpr int kWidth = 512, kHeads = 8, kLayers = 12, kMlp = 2048, kContext = 77, kEmbed = 512, kVocab = 49408;

vitattn::Matrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  vitattn::Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

vitattn::RowVector random_row(Eigen::Index n, std::mt19937& rng, float scale, float offset = 0.0f) {
  return random_matrix(1, n, rng, scale).row(0).array() + offset;
}

vitattn::TextTower random_tower() {
  std::mt19937 rng(20240301u);
  vitattn::TextTower t;
  t.n_heads = kHeads;
  t.eps = 1e-5f;
  t.gelu = vitattn::Gelu::quick;
  t.token_embedding = random_matrix(kVocab, kWidth, rng, 0.02f);
  t.positional_embedding = random_matrix(kContext, kWidth, rng, 0.01f);
  const float s = 1.0f / std::sqrt(static_cast<float>(kWidth));
  for (int l = 0; l < kLayers; ++l) {
    vitattn::EncoderBlock b;
    b.norm1 = {random_row(kWidth, rng, 0.1f, 1.0f), random_row(kWidth, rng, 0.1f)};
    b.w_qkv = random_matrix(3 * kWidth, kWidth, rng, s);
    b.b_qkv = random_row(3 * kWidth, rng, 0.02f);
    b.w_proj = random_matrix(kWidth, kWidth, rng, s);
    b.b_proj = random_row(kWidth, rng, 0.02f);
    b.norm2 = {random_row(kWidth, rng, 0.1f, 1.0f), random_row(kWidth, rng, 0.1f)};
    b.w_fc1 = random_matrix(kMlp, kWidth, rng, s);
    b.b_fc1 = random_row(kMlp, rng, 0.02f);
    b.w_fc2 = random_matrix(kWidth, kMlp, rng, 1.0f / std::sqrt(static_cast<float>(kMlp)));
    b.b_fc2 = random_row(kWidth, rng, 0.02f);
    t.blocks.push_back(std::move(b));
  }
  t.final_norm = {random_row(kWidth, rng, 0.1f, 1.0f), random_row(kWidth, rng, 0.1f)};
  t.w_projection = random_matrix(kEmbed, kWidth, rng, s);
  t.logit_scale = std::log(100.0f);
  t.validate("bench");
  return t;
}

// clip.tokenize's rows: SOT, 6…20 ids below SOT, EOT, zeros.
std::vector<std::vector<std::int32_t>> random_prompts(int n) {
  std::mt19937 rng(7u);
  std::uniform_int_distribution<int> length(6, 20), id(256, kVocab - 3);
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(n), std::vector<std::int32_t>(kContext, 0));
  for (auto& row : out) {
    const int len = length(rng);
    row[0] = kVocab - 2;
    for (int i = 1; i <= len; ++i) row[static_cast<std::size_t>(i)] = id(rng);
    row[static_cast<std::size_t>(len + 1)] = kVocab - 1;
  }
  return out;
}

double seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    const vitattn::TextTower tower = random_tower();
    const auto prompts = random_prompts(args.texts);
    vitattn::pipeline::set_library_threads(args.threads);
    std::vector<double> alone_t, batched_t;
    bool identical = true;
    for (int round = 0; round < args.warmup + args.repeat; ++round) {
      std::vector<vitattn::RowVector> alone, batched;
      auto run_alone = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        for (const auto& ids : prompts) alone.push_back(vitattn::encode_text(tower, ids).embedding);
        return seconds(t0);
      };
      auto run_batched = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < prompts.size(); i += static_cast<std::size_t>(args.batch)) {
          const auto end = std::min(prompts.size(), i + static_cast<std::size_t>(args.batch));
          const std::vector<std::vector<std::int32_t>> part(prompts.begin() + static_cast<std::ptrdiff_t>(i),
                                                            prompts.begin() + static_cast<std::ptrdiff_t>(end));
          for (vitattn::TextResult& r : vitattn::encode_texts(tower, part)) batched.push_back(std::move(r.embedding));
        }
        return seconds(t0);
      };
      double a = 0.0, b = 0.0;
      if (round % 2 == 0) {
        a = run_alone();
        b = run_batched();
      } else {
        b = run_batched();
        a = run_alone();
      }
      for (std::size_t i = 0; i < alone.size(); ++i)
        identical = identical && std::memcmp(alone[i].data(), batched[i].data(), sizeof(float) * kEmbed) == 0;
      if (round < args.warmup) continue;
      alone_t.push_back(a);
      batched_t.push_back(b);
    }
    // The products' floating-point operations of one pass over the texts: per computed row and
    // layer 2·12·W² (qkv 3W², out_proj W², the MLP 2·4W²) and 2·2·n·W for its attention (QKᵀ, AV);
    // the projection's 2·W·E per text. What the GFLOP/s figures divide.
    double flops = 0.0;
    for (const auto& ids : prompts) {
      const double n = vitattn::end_of_text_position(ids) + 1.0, w = kWidth;
      flops += kLayers * (2.0 * 12.0 * w * w * n + 4.0 * n * n * w) + 2.0 * w * kEmbed;
    }
    const double a = median(alone_t), b = median(batched_t);
    std::printf("{\"texts\": %d, \"batch\": %d, \"threads\": %d, \"repeat\": %d, \"width\": %d, \"layers\": %d, "
                "\"one_at_a_time_median\": %.6f, \"batched_median\": %.6f, \"speedup\": %.3f, "
                "\"texts_per_second_one_at_a_time\": %.1f, \"texts_per_second_batched\": %.1f, "
                "\"gflops_one_at_a_time\": %.1f, \"gflops_batched\": %.1f, \"identical\": %s}\n",
                args.texts, args.batch, args.threads, args.repeat, kWidth, kLayers, a, b, a / b, args.texts / a,
                args.texts / b, flops / a * 1e-9, flops / b * 1e-9, identical ? "true" : "false");
    return identical ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "vitattn_text_bench: " << e.what() << "\n";
    return 1;
  }
}
