// `forward` as a pipeline step: each input's arrays written with the shapes the header says,
// a failing input said in its result while the others go on, and no output replacing an input.
#include "pipeline/forward_job.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/seeded_model.hpp"
#include "tensors/npy.hpp"
#include "test_util.hpp"

namespace vitattn::pipeline {
namespace {
namespace fs = std::filesystem;

TEST(ForwardJob, WritesEachInputsArraysAndReportsAFailureAsData) {
  test::TempDir dir;
  const VitModel model = make_seeded_model(SeededShape{32, 8, 24, 8}, 1);
  const std::vector<float> two(2 * 3 * 32 * 32, 0.25f);
  tensors::write_npy(dir / "x.npy", two.data(), {2, 3, 32, 32});
  tensors::write_npy(dir / "odd.npy", two.data(), {3, 30, 30});  // not a multiple of the patch size
  ForwardRequest r;
  r.inputs = {dir / "odd.npy", dir / "x.npy"};
  r.output = dir.path();
  check_forward_outputs(r);
  const std::vector<ForwardInputResult> results = forward_files(model, r);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error.rfind((dir / "odd.npy").string() + ": expected [3, H, W] or [N, 3, H, W]", 0), 0u)
      << results[0].error;
  EXPECT_FALSE(fs::exists(dir / "odd_attention.npy"));
  ASSERT_EQ(results[1].error, "");
  EXPECT_EQ(results[1].images, 2u);
  EXPECT_EQ(tensors::read_npy(results[1].written.attention).shape, (std::vector<std::uint64_t>{2, 1, 1, 17, 17}));
  EXPECT_EQ(tensors::read_npy(results[1].written.features).shape, (std::vector<std::uint64_t>{2, 8}));  // d_attn: attention only
  EXPECT_EQ(tensors::read_npy(results[1].written.tokens).shape, (std::vector<std::uint64_t>{2, 17, 8}));  // [N, T, d_attn]
  EXPECT_EQ(tensors::read_npy(results[1].written.norms).shape, (std::vector<std::uint64_t>{2, 1, 17}));   // [N, layers, T]
  EXPECT_TRUE(results[1].written.logits.empty());  // no classifier, no logits
  EXPECT_FALSE(fs::exists(dir / "x_logits.npy"));
}

TEST(ForwardJob, NoOutputReplacesAnInputTheModelOrAnotherInputsOutput) {
  test::TempDir dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  ForwardRequest r;
  r.output = dir.path();
  r.inputs = {dir / "x.npy", dir / "x_features.npy"};
  EXPECT_THROW(check_forward_outputs(r), Error);
  r.inputs = {dir / "x.npy", dir / "x_norms.npy"};
  EXPECT_THROW(check_forward_outputs(r), Error);
  r.inputs = {dir / "x.npy", dir / "x_tokens.npy"};
  EXPECT_THROW(check_forward_outputs(r), Error);
  r.inputs = {dir / "m.npy"};
  r.model_file = dir / "m_logits.npy";
  EXPECT_THROW(check_forward_outputs(r), Error);
  r.model_file.clear();
  r.inputs = {dir / "a" / "t.npy", dir / "b" / "t.npy"};
  EXPECT_THROW(check_forward_outputs(r), Error);
  r.inputs = {dir / "a" / "t.npy", dir / "a" / "t.npy"};  // the same input twice writes its own files twice
  EXPECT_NO_THROW(check_forward_outputs(r));
}

// The gradients' and the maps' names are outputs too, but only when a class asks for them.
TEST(ForwardJob, GradientOutputsAreNamedAndGuardedOnlyWithAClass) {
  test::TempDir dir;
  ForwardRequest r;
  r.output = dir.path();
  r.inputs = {dir / "x.npy", dir / "x_grad_blocks.npy", dir / "x_relevance_legrad.npy"};
  EXPECT_NO_THROW(check_forward_outputs(r));
  EXPECT_TRUE(forward_outputs(r, dir / "x.npy").classes.empty());
  r.classes = {3};
  EXPECT_THROW(check_forward_outputs(r), Error);  // x_grad_blocks.npy is x.npy's output now
  r.inputs = {dir / "x.npy", dir / "x_relevance_legrad.npy"};
  EXPECT_NO_THROW(check_forward_outputs(r));
  r.methods = {pipeline::MapMethod::grad_rollout, pipeline::MapMethod::legrad};
  EXPECT_THROW(check_forward_outputs(r), Error);
  const ForwardOutputs f = forward_outputs(r, dir / "x.npy");
  ASSERT_EQ(f.classes.size(), 1u);
  EXPECT_EQ(f.classes[0].grad_attention, dir / "x_grad_attention.npy");
  EXPECT_EQ(f.classes[0].grad_blocks, dir / "x_grad_blocks.npy");
  EXPECT_EQ(f.classes[0].relevance,
            (std::vector<fs::path>{dir / "x_relevance_grad-rollout.npy", dir / "x_relevance_legrad.npy"}));
  EXPECT_EQ(f.embedding, dir / "x_embedding.npy");              // named always, written when the model has one
  EXPECT_EQ(f.probe_attention, dir / "x_probe_attention.npy");  // likewise, for a probe-pooled model (SigLIP)
  EXPECT_EQ(f.all().size(), 11u);
}

// Several classes: each class's files carry its index, as the image command's maps do; one
// class keeps the plain names.
TEST(ForwardJob, SeveralClassesNameEachClassesFiles) {
  test::TempDir dir;
  ForwardRequest r;
  r.output = dir.path();
  r.classes = {3, 5};
  r.methods = {pipeline::MapMethod::chefer};
  const ForwardOutputs f = forward_outputs(r, dir / "x.npy");
  ASSERT_EQ(f.classes.size(), 2u);
  EXPECT_EQ(f.classes[0].class_index, 3);
  EXPECT_EQ(f.classes[0].grad_attention, dir / "x_grad_attention_c3.npy");
  EXPECT_EQ(f.classes[1].grad_blocks, dir / "x_grad_blocks_c5.npy");
  EXPECT_EQ(f.classes[1].relevance, std::vector<fs::path>{dir / "x_relevance_chefer_c5.npy"});
  EXPECT_EQ(f.all().size(), 7u + 2u * 3u);
  r.inputs = {dir / "x.npy", dir / "x_grad_blocks_c5.npy"};  // x.npy's output now
  EXPECT_THROW(check_forward_outputs(r), Error);
}

// The image-text probabilities are an output only beside texts: an input of that name is left
// alone without them, and guarded with them.
TEST(ForwardJob, TextProbabilitiesAreNamedOnlyWithTexts) {
  test::TempDir dir;
  ForwardRequest r;
  r.output = dir.path();
  r.inputs = {dir / "x.npy", dir / "x_probs.npy"};
  EXPECT_TRUE(forward_outputs(r, dir / "x.npy").probs.empty());
  EXPECT_NO_THROW(check_forward_outputs(r));
  r.texts = {std::vector<std::int32_t>(64, 1)};
  EXPECT_EQ(forward_outputs(r, dir / "x.npy").probs, dir / "x_probs.npy");
  EXPECT_THROW(check_forward_outputs(r), Error);  // x_probs.npy is x.npy's output now
}

}  // namespace
}  // namespace vitattn::pipeline
