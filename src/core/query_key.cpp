#include "query_key.hpp"

#include "error.hpp"
#include "gemm_bf16.hpp"
#include "layers.hpp"
#include "rope.hpp"

namespace vitattn {

QueryKey query_key(const VitModel& model, const ImageTensor& image) {
  if (model.blocks.empty()) throw Error("query_key: the model has no attention block");
  const EncoderBlock& block = model.blocks.front();
  const Matrix x = embed_image(model, image);  // (n_tokens, d_model)
  const Matrix xn = block.norm1.present() ? layer_norm(x, block.norm1, model.eps) : x;
  // xn (n_tokens, d_model) · w_qkvᵀ (d_model, 3·d_attn) → qkv (n_tokens, 3·d_attn) = [q | k | v],
  // float32 under any precision, as the forward's (vit.cpp's run_block)
  const KeepFloat32 qkv_in_float32;
  Matrix qkv = linear(xn, block.w_qkv, block.b_qkv);
  model.check_weights();
  const Eigen::Index d_attn = model.d_attn(), d_head = model.d_head();
  if (model.rope.present()) {  // head 0's patches rotated, as forward's attention does (rope.hpp)
    const RopeTable table = rope_table(model.rope, image.height / model.patch_size, image.width / model.patch_size);
    apply_rope(qkv.middleCols(0, d_head), model.first_patch_token(), table);
    apply_rope(qkv.middleCols(d_attn, d_head), model.first_patch_token(), table);
  }
  return {qkv.middleCols(0, d_head),        // (n_tokens, d_head)
          qkv.middleCols(d_attn, d_head)};  // (n_tokens, d_head)
}

}  // namespace vitattn
