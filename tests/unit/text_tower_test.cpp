// CLIP's text encoder (core/text_tower.hpp) against a direct computation over the whole context
// with scaled_dot_product_attention and causal_mask (attention.hpp, its own tests), which is
// what the contract says the computed length must reproduce on rows 0…EOT; its batches against
// each text alone, byte for byte; and the word relevance's (core/text_relevance.hpp) layers.
// The relevance's values are checked against torch autograd in tests/oracle/test_clip_text.py.
#include "core/text_tower.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/text_relevance.hpp"
#include "pipeline/class_embeddings.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

constexpr int kWidth = 8, kHeads = 2, kContext = 6, kVocab = 10, kEmbed = 4, kMlp = 16;

// width: kWidth, or another (a multiple of kHeads) for the batches' row alignment.
TextTower small_tower(std::mt19937& rng, int width = kWidth) {
  TextTower t;
  t.n_heads = kHeads;
  t.gelu = Gelu::quick;
  t.token_embedding = test::random_matrix(kVocab, width, rng);        // (vocab, W)
  t.positional_embedding = test::random_matrix(kContext, width, rng); // (ctx, W)
  for (int l = 0; l < 2; ++l) {
    EncoderBlock b;
    b.norm1 = {RowVector::Ones(width) + test::random_matrix(1, width, rng, 0.2f).row(0), test::random_matrix(1, width, rng, 0.2f).row(0)};
    b.w_qkv = test::random_matrix(3 * width, width, rng);  // (3·W, W)
    b.b_qkv = test::random_matrix(1, 3 * width, rng).row(0);
    b.w_proj = test::random_matrix(width, width, rng, 0.5f);
    b.b_proj = test::random_matrix(1, width, rng).row(0);
    b.norm2 = {RowVector::Ones(width), RowVector::Zero(width)};
    b.w_fc1 = test::random_matrix(kMlp, width, rng, 0.5f);
    b.b_fc1 = test::random_matrix(1, kMlp, rng).row(0);
    b.w_fc2 = test::random_matrix(width, kMlp, rng, 0.5f);
    b.b_fc2 = test::random_matrix(1, width, rng).row(0);
    t.blocks.push_back(std::move(b));
  }
  t.final_norm = {RowVector::Ones(width), RowVector::Zero(width)};
  t.w_projection = test::random_matrix(kEmbed, width, rng);  // (E, W)
  t.validate("test");
  return t;
}

// The whole context, every head through scaled_dot_product_attention with the causal mask
// (`causal`), else none; the embedding the row at `pooled` through the projection and its bias.
struct Direct {
  RowVector embedding;
  std::vector<std::vector<Matrix>> attention;  // [layer][head] (ctx, ctx)
};
Direct direct(const TextTower& t, const std::vector<std::int32_t>& ids, bool causal, int pooled) {
  Matrix x(kContext, kWidth);
  for (int i = 0; i < kContext; ++i) x.row(i) = Matrix(t.token_embedding).row(ids[static_cast<std::size_t>(i)]) + Matrix(t.positional_embedding).row(i);
  Direct out;
  const int d = kWidth / kHeads;
  for (const EncoderBlock& b : t.blocks) {
    const Matrix qkv = (layer_norm(x, b.norm1, t.eps) * Matrix(b.w_qkv).transpose()).rowwise() + b.b_qkv;
    Matrix heads(kContext, kWidth);
    auto& layer = out.attention.emplace_back();
    for (int h = 0; h < kHeads; ++h) {
      const Attention a = scaled_dot_product_attention(qkv.middleCols(h * d, d), qkv.middleCols(kWidth + h * d, d),
                                                       qkv.middleCols(2 * kWidth + h * d, d),
                                                       causal ? causal_mask(kContext) : Matrix());
      heads.middleCols(h * d, d) = a.output;
      layer.push_back(a.weights);
    }
    x += (heads * Matrix(b.w_proj).transpose()).rowwise() + b.b_proj;
    Matrix hidden = (layer_norm(x, b.norm2, t.eps) * Matrix(b.w_fc1).transpose()).rowwise() + b.b_fc1;
    hidden = hidden.array() / (1.0f + (-1.702f * hidden.array()).exp());  // QuickGELU x·σ(1.702x)
    x += (hidden * Matrix(b.w_fc2).transpose()).rowwise() + b.b_fc2;
  }
  RowVector e = layer_norm(Matrix(x.row(pooled)), t.final_norm, t.eps) * Matrix(t.w_projection).transpose();
  if (t.b_projection.size() > 0) e += t.b_projection;
  out.embedding = e / e.norm();
  return out;
}

TEST(TextTower, ComputedLengthMatchesTheWholeContextUnderTheCausalMask) {
  std::mt19937 rng(5);
  const TextTower t = small_tower(rng);
  const std::vector<std::int32_t> ids = {7, 3, 2, 9, 0, 0};  // SOT-like 7, two tokens, the largest id (EOT) at 3
  const TextResult got = encode_text(t, ids, true);
  const Direct want = direct(t, ids, true, 3);
  ASSERT_EQ(got.length, 4);
  EXPECT_LT((got.embedding - want.embedding).cwiseAbs().maxCoeff(), 1e-5f);
  EXPECT_NEAR(got.embedding.norm(), 1.0f, 1e-5f);
  ASSERT_EQ(got.attention.size(), 2u);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < static_cast<std::size_t>(kHeads); ++h) {
      const Matrix& a = got.attention[l][h];
      ASSERT_EQ(a.rows(), 4);
      ASSERT_EQ(a.cols(), 4);
      EXPECT_LT((a - want.attention[l][h].topLeftCorner(4, 4)).cwiseAbs().maxCoeff(), 1e-5f) << "layer " << l << " head " << h;
      EXPECT_EQ(a(0, 1), 0.0f);  // masked exactly
    }
}

// SigLIP's settings: no mask (every position computed, every score kept), the last position's
// row through a head with a bias, and logits with logit_bias read by their sigmoid.
TEST(TextTower, SiglipSettingsAttendEverywhereAndPoolTheLastPosition) {
  std::mt19937 rng(6);
  TextTower t = small_tower(rng);
  t.mask = TextMask::none;
  t.pooling = TextPooling::last;
  t.b_projection = test::random_matrix(1, kEmbed, rng).row(0);
  t.validate("test");
  const std::vector<std::int32_t> ids = {4, 9, 2, 1, 1, 1};  // the text, then its end id repeated as padding
  const TextResult got = encode_text(t, ids, true);
  const Direct want = direct(t, ids, false, kContext - 1);
  ASSERT_EQ(got.length, kContext);
  EXPECT_LT((got.embedding - want.embedding).cwiseAbs().maxCoeff(), 1e-5f);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < static_cast<std::size_t>(kHeads); ++h) {
      EXPECT_LT((got.attention[l][h] - want.attention[l][h]).cwiseAbs().maxCoeff(), 1e-5f) << "layer " << l;
      EXPECT_GT(got.attention[l][h](0, kContext - 1), 0.0f);  // the first token sees the last
    }
}

// The class-embedding cache's key (pipeline/class_embeddings.hpp) names the tower: each setting
// that changes an embedding changes it, SigLIP's as CLIP's, so a SigLIP's ensemble never reads
// a cached CLIP's of the same weights.
TEST(ClassEmbeddings, TowerIdentityChangesWithEachSetting) {
  std::mt19937 rng(8);
  const TextTower base = small_tower(rng);
  const std::string id = pipeline::text_tower_identity(base);
  std::mt19937 same(8);
  EXPECT_EQ(id, pipeline::text_tower_identity(small_tower(same)));
  const std::vector<std::pair<const char*, std::function<void(TextTower&)>>> changes = {
      {"mask", [](TextTower& t) { t.mask = TextMask::none; }},
      {"pooling", [](TextTower& t) { t.pooling = TextPooling::last; }},
      {"head bias", [](TextTower& t) { t.b_projection = RowVector::Zero(kEmbed); }},
      {"logit_bias", [](TextTower& t) { t.logit_bias = -10.0f; }},
      {"probabilities", [](TextTower& t) { t.probabilities = ClassProbability::sigmoid; }},
      {"gelu", [](TextTower& t) { t.gelu = Gelu::erf; }},
      {"heads", [](TextTower& t) { t.n_heads = 1; }},
  };
  for (const auto& [what, change] : changes) {
    TextTower t = base;
    change(t);
    EXPECT_NE(pipeline::text_tower_identity(t), id) << what;
  }
}

TEST(TextTower, ProbabilitiesAreASoftmaxOverTextsOrEachLogitsSigmoid) {
  TextTower t;
  t.logit_scale = std::log(2.0f);
  t.logit_bias = -1.0f;
  Matrix images(1, 2), texts(2, 2);
  images << 1.0f, 0.0f;
  texts << 1.0f, 0.0f, 0.0f, 1.0f;  // cosines 1 and 0
  const Matrix logits = image_text_logits(t, images, texts);  // 2·cos − 1
  EXPECT_NEAR(logits(0, 0), 1.0f, 1e-6f);
  EXPECT_NEAR(logits(0, 1), -1.0f, 1e-6f);
  t.probabilities = ClassProbability::sigmoid;
  const Matrix sig = image_text_probabilities(t, logits);
  EXPECT_NEAR(sig(0, 0), 0.7310586f, 1e-6f);  // 1 / (1 + e^-1)
  EXPECT_NEAR(sig(0, 1), 0.2689414f, 1e-6f);
  t.probabilities = ClassProbability::softmax;
  const Matrix soft = image_text_probabilities(t, logits);
  EXPECT_NEAR(soft(0, 0), 0.8807971f, 1e-6f);  // e^1 / (e^1 + e^-1)
  EXPECT_NEAR(soft(0, 1), 0.1192029f, 1e-6f);
}

TEST(TextTower, EndOfTextIsTheFirstLargestId) {
  EXPECT_EQ(end_of_text_position({5, 1, 9, 9, 0}), 2);
  EXPECT_EQ(end_of_text_position({5, 0, 0}), 0);
}

TEST(TextTower, RefusesIdsOutsideTheVocabularyOrTheContext) {
  std::mt19937 rng(6);
  const TextTower t = small_tower(rng);
  EXPECT_THROW(encode_text(t, {7, 3, kVocab, 0, 0, 0}), Error);
  EXPECT_THROW(encode_text(t, {7, 3, -1, 0, 0, 0}), Error);
  EXPECT_THROW(encode_text(t, {7, 3, 9}), Error);
}

bool same_bytes(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

// Texts of every length 1…ctx, one twice; the largest id (the EOT) placed by hand.
std::vector<std::vector<std::int32_t>> mixed_texts() {
  return {{7, 3, 2, 9, 0, 0}, {9, 0, 0, 0, 0, 0}, {7, 9, 0, 0, 0, 0}, {7, 1, 2, 3, 4, 9},
          {7, 5, 9, 0, 0, 0}, {7, 3, 2, 9, 0, 0}, {7, 8, 1, 6, 9, 0}};
}

class TextBatch : public ::testing::TestWithParam<int> {
 protected:
  void TearDown() override { set_gemm_threads(1); }
};

// A batch's texts have the bytes each has alone, at 1 and 2 threads: its rows go through the
// products together, and a width of 6 puts the rows of a naively stacked text at another
// alignment than alone (24-byte rows), which changes the LayerNorms' sums in the last bits.
TEST_P(TextBatch, EachTextHasTheBytesItHasAlone) {
  std::mt19937 rng(11);
  const TextTower t = small_tower(rng, GetParam());
  const auto texts = mixed_texts();
  std::vector<TextResult> alone;
  for (const auto& ids : texts) alone.push_back(encode_text(t, ids, true));
  for (int threads : {1, 2}) {
    set_gemm_threads(threads);
    const std::vector<TextResult> batch = encode_texts(t, texts, true);
    ASSERT_EQ(batch.size(), texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      SCOPED_TRACE("text " + std::to_string(i) + ", " + std::to_string(threads) + " threads");
      EXPECT_EQ(batch[i].length, alone[i].length);
      EXPECT_TRUE(same_bytes(batch[i].embedding, alone[i].embedding));
      ASSERT_EQ(batch[i].attention.size(), alone[i].attention.size());
      for (std::size_t l = 0; l < alone[i].attention.size(); ++l)
        for (std::size_t h = 0; h < static_cast<std::size_t>(kHeads); ++h)
          EXPECT_TRUE(same_bytes(batch[i].attention[l][h], alone[i].attention[l][h])) << "layer " << l << " head " << h;
    }
  }
  EXPECT_TRUE(encode_texts(t, {}).empty());
  EXPECT_THROW(encode_texts(t, {texts[0], {7, 3, kVocab, 0, 0, 0}}), Error);
}

INSTANTIATE_TEST_SUITE_P(Widths, TextBatch, ::testing::Values(kWidth, 6));

// The tape encode_text records is the forward it hands out: the attention kept, the stream's
// last block output on the computed rows.
TEST(TextRelevance, TapeHoldsTheForwardsAttention) {
  std::mt19937 rng(12);
  const TextTower t = small_tower(rng);
  ForwardTape tape;
  const TextResult got = encode_text(t, {7, 3, 2, 9, 0, 0}, true, &tape);
  ASSERT_EQ(tape.blocks.size(), 2u);
  EXPECT_EQ(tape.x_out.rows(), 4);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < static_cast<std::size_t>(kHeads); ++h)
      EXPECT_TRUE(same_bytes(tape.blocks[l].attention[h], got.attention[l][h]));
}

// The start layers: −1 is the last alone, −K beyond the tower every layer, a layer ≥ L refused;
// one value per prompt token (SOT and EOT left out); the rows by start layer are the same rollout.
TEST(TextRelevance, StartLayersAndTheTokensRead) {
  std::mt19937 rng(13);
  const TextTower t = small_tower(rng);
  ForwardTape tape;
  const std::vector<std::int32_t> ids{7, 3, 2, 9, 0, 0};
  encode_text(t, ids, false, &tape);
  RowVector u = test::random_matrix(1, kEmbed, rng).row(0);
  u.normalize();
  const RowVector last = word_relevance(t, ids, tape, u, -1);
  ASSERT_EQ(last.size(), 2);  // tokens 1 and 2 of SOT, 3, 2, EOT
  EXPECT_TRUE(same_bytes(last, word_relevance(t, ids, tape, u, 1)));
  EXPECT_TRUE(same_bytes(word_relevance(t, ids, tape, u, -5), word_relevance(t, ids, tape, u, 0)));
  EXPECT_THROW(word_relevance(t, ids, tape, u, 2), Error);
  EXPECT_THROW(word_relevance(t, ids, tape, RowVector::Ones(kEmbed + 1), -1), Error);
  const Matrix rows = relevance_by_start_layer(t, tape, 3, text_logit_gradient(t, tape.x_out.row(3), u), 0);
  EXPECT_TRUE(same_bytes(rows.row(0).segment(1, 2), word_relevance(t, ids, tape, u, 0)));
  EXPECT_TRUE(same_bytes(rows.row(1).segment(1, 2), last));
  // R = I + …: the EOT's own entry is at least 1, and every entry ≥ 0 (a sum of clamped products)
  EXPECT_GE(rows(1, 3), 1.0f);
  EXPECT_GE(rows.minCoeff(), 0.0f);
}

TEST(TextTower, ValidateNamesTheMisshapenTensor) {
  std::mt19937 rng(7);
  TextTower t = small_tower(rng);
  t.blocks[1].w_proj = test::random_matrix(kWidth, kWidth + 1, rng);
  try {
    t.validate("m.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.safetensors: text tower block 1 out_proj weight is [8, 9]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vitattn
