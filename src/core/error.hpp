#pragma once
// The one exception type of vitattn. Messages are specific and self-contained:
// "model.safetensors: attn.q.weight is [64, 384], expected [64, 768]".
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace vitattn {

// What a message is about when it is a value the caller chose (a layer, a pixel limit, the
// file a log goes to): `role` names the value as the library knows it ("layer", "pixel
// limit", "the log"), `value` is the value as given (may be empty). The layers never name a
// command-line flag: a caller that has flags (src/cli) maps the role to its flag.
struct Subject {
  std::string role;
  std::string value;
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}

  // A chosen value does not fit the model, the input or the files on disk. `detail`: what is
  // wrong, without the role or the source ("the model has layers 0…2"); `source`: the file
  // the value does not fit, when there is one. what() reads on its own:
  //   "layer 3: the model has layers 0…2"                        (no source)
  //   "x.png: image is 9000x9000, over the pixel limit of 50 MP"  (a source)
  Error(Subject subject, std::string detail, std::string source = {})
      : std::runtime_error(source.empty() ? subject.role + (subject.value.empty() ? "" : " " + subject.value) + ": " + detail
                                          : source + ": " + detail),
        subject_(std::move(subject)), detail_(std::move(detail)), source_(std::move(source)) {}

  const std::optional<Subject>& subject() const { return subject_; }  // set by the second constructor only
  const std::string& detail() const { return detail_; }
  const std::string& source() const { return source_; }

 private:
  std::optional<Subject> subject_;
  std::string detail_, source_;
};

// Runs f() and returns what it returns; an Error from it that names no chosen value (the
// core's errors name no file: activations that became non-finite, a codec that failed) is
// thrown again as "<source>: <its message>". An Error with a subject passes on unchanged: the
// caller says it with its option. The one place for "rethrow with the source named".
template <class F>
decltype(auto) naming_source(const std::string& source, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error& e) {
    if (e.subject()) throw;
    throw Error(source + ": " + e.what());
  }
}

}  // namespace vitattn
