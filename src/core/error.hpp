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

// The fields of a request (what to load, what to draw, which images to take) whose values a
// caller chooses.
enum class Field { heads, layer, head, img_size, keep_aspect, save_model, max_pixels, strict };

// A chosen value does not fit the model or the input. The library says what is wrong in
// terms of the value ("layer 3: the model has layers 0…2", "x.png: image is 9000x9000, over
// the pixel limit"); `field` lets the caller name the value its own way (the command line:
// the layer flag and its value, then the detail; or the file, the detail and the flag).
class OptionError : public Error {
 public:
  // `source`: the file the value does not fit, when there is one; `value`: as given, may be empty.
  OptionError(Field field, std::string value, std::string detail, std::string source = {})
      : Error((source.empty() ? std::string(plain_name(field)) + (value.empty() ? "" : " " + value) : source) + ": " +
              detail),
        field_(field), value_(std::move(value)), detail_(std::move(detail)), source_(std::move(source)) {}
  Field field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& detail() const { return detail_; }  // what is wrong, without the field or the source
  const std::string& source() const { return source_; }

  static const char* plain_name(Field f) {
    switch (f) {
      case Field::heads: return "head count";
      case Field::layer: return "layer";
      case Field::head: return "head";
      case Field::img_size: return "input size";
      case Field::keep_aspect: return "keeping the aspect ratio";
      case Field::save_model: return "saving the model";
      case Field::max_pixels: return "pixel limit";
      case Field::strict: return "strict decoding";
    }
    return "option";
  }

 private:
  Field field_;
  std::string value_, detail_, source_;
};

}  // namespace vitattn
