#pragma once
// The one exception type of vitattn. Messages are specific and self-contained:
// "model.safetensors: attn.q.weight is [64, 384], expected [64, 768]".
#include <stdexcept>
#include <string>

namespace vitattn {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace vitattn
