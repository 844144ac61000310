#pragma once
// Tokens that lie: what each token of the residual stream carries, layer by layer, and how much
// attention it soaks up. Trained ViTs reuse a few low-information patch tokens as scratch space
// (Darcet et al., "Vision Transformers Need Registers", ICLR 2024): their norms grow far above
// the other patches' and they draw attention from everywhere, so the class token's map lights
// them (often image corners or flat sky) beside the object. These are the numbers that show it:
//   - norms: the L2 norm of every token of the stream after each block;
//   - artifacts: the patch tokens whose norm exceeds ratio × the layer's median patch norm
//     (the median, not the mean: the artifacts themselves would pull a mean up);
//   - sinks: the attention each token receives, the mean over heads and query rows of its
//     column (a uniform layer gives every token 1/T; a sink takes far more);
//   - the register share: how much of the class token's attention goes to the registers;
//   - per head: the class token's row entropy, the mean attention distance, the area of the
//     DINO mass mask, and the share of the class token's attention taken by flagged tokens.
// A TokenRecorder hears one forward pass (vit.hpp's on_attention and on_block_output) and
// keeps O(layers × (heads + 1) × tokens) numbers, not the matrices.
#include <vector>

#include "tensor.hpp"

namespace vitattn {

// x (n_tokens, width) → (n_tokens) the L2 norm of every row, summed in double.
RowVector token_norms(const Matrix& x);

// The median of norms[first_patch …] (the patch tokens; the mean of the two middle values for
// an even count). Throws Error when there are no patch tokens.
float median_patch_norm(const RowVector& norms, int first_patch);

// The patch tokens (indices into the n_tokens) whose norm is above ratio × median_patch_norm,
// in increasing order. ratio > 0.
std::vector<int> artifact_tokens(const RowVector& norms, int first_patch, float ratio);

// heads H × (n_tokens, n_tokens) → (n_tokens): token j's score is the mean over heads and
// query rows i of a_ij (each row sums to 1, so the scores sum to 1 and average 1/T).
RowVector sink_scores(const std::vector<Matrix>& heads);

// The class token's attention (row 0) summed over `tokens`, averaged over the heads:
// register share with tokens 1 … n_registers, flagged share with artifact_tokens.
double class_attention_share(const std::vector<Matrix>& heads, const std::vector<int>& tokens);

// --clean: a class-token map (grid_h, grid_w) with the flagged tokens' cells set to 0 and the
// rest scaled so the map's total is what it was (so the mass mask and the colours keep their
// meaning). `flagged`: token indices, patches from first_patch (cell = token − first_patch).
// A map whose every cell is flagged, or whose rest sums to 0, is returned with them zeroed only.
Matrix without_tokens(const Matrix& map, const std::vector<int>& flagged, int first_patch);

// One head of one layer, for heads.csv and the report's head table.
struct HeadStats {
  double entropy = 0;         // −Σ_j a_0j ln a_0j over all n_tokens of the class token's row, nats
  double distance_px = 0;     // mean attention distance of the patch queries (attention_stats.hpp), input pixels
  double mask_share = 0;      // DINO's mass mask of the class token's map at the threshold: its cells / grid cells
  double flagged_share = 0;   // Σ_j a_0j over the layer's flagged tokens
};

struct TokenShape {
  int layers = 1, heads = 1;
  int first_patch = 1;  // the leading tokens (class, distillation) + registers
  int grid_h = 0, grid_w = 0;
  int patch_size = 16;
  // The first register: after the class token (1), distilled DeiT's distillation token too (2),
  // SigLIP's none (0). Tokens first_register … first_patch − 1 are the registers.
  int first_register = 1;
  int tokens() const { return first_patch + grid_h * grid_w; }
  int registers() const { return first_patch - first_register; }
};

// Every layer's diagnostics of one image, as TokenRecorder::finish gives them.
struct TokenDiagnostics {
  TokenShape shape;
  float artifact_ratio = 3.0f;
  Matrix norms;                               // (layers, n_tokens) after each block
  RowVector median_norm;                      // (layers) the median patch norm
  std::vector<std::vector<int>> flagged;      // [layer] artifact_tokens of that layer
  Matrix sinks;                               // (layers, n_tokens) sink_scores
  RowVector register_share;                   // (layers) class_attention_share over the registers; 0 without
  std::vector<std::vector<HeadStats>> heads;  // [layer][head]
};

// Hears one forward pass of every layer (in any order) and makes TokenDiagnostics.
class TokenRecorder {
 public:
  // threshold: the mass mask's fraction for HeadStats::mask_share (0 < threshold ≤ 1).
  TokenRecorder(const TokenShape& shape, float artifact_ratio, float threshold);

  // heads H × (n_tokens, n_tokens): layer's softmax rows.
  void add_attention(int layer, const std::vector<Matrix>& heads);
  // x (n_tokens, width): the residual stream after block `layer` (vit.hpp's on_block_output).
  void add_block_output(int layer, const Matrix& x);

  // Throws Error naming the first layer that was not heard.
  TokenDiagnostics finish() const;

 private:
  TokenShape shape_;
  float ratio_, threshold_;
  Matrix distances_;                       // (n_patches, n_patches) patch_distances
  Matrix norms_, sinks_;                   // (layers, n_tokens)
  std::vector<Matrix> class_rows_;         // [layer] (heads, n_tokens) row 0 of each head; without a leading
                                           // token (SigLIP) the mean of its rows
  std::vector<std::vector<double>> distance_;  // [layer][head]
  std::vector<bool> heard_attention_, heard_output_;
};

}  // namespace vitattn
