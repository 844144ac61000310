#include "query_key.hpp"

#include "layers.hpp"

namespace vitattn {

QueryKey query_key(const SingleHeadModel& model, const ImageTensor& image) {
  const Matrix patches = patchify(image, model.patch_size);  // (n_patches, 3·P·P)
  const Matrix x = embed_tokens(model, patches);             // (n_tokens, d_model)
  return {linear(x, model.w_q, model.b_q),                   // (n_tokens, d_k)
          linear(x, model.w_k, model.b_k)};                  // (n_tokens, d_k)
}

}  // namespace vitattn
