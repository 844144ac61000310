#include "targets.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/vit.hpp"
#include "image/image_header.hpp"
#include "image/image_loader.hpp"
#include "model/open_model.hpp"
#include "model/single_head_layout.hpp"
#include "tensors/npy.hpp"
#include "tensors/pth_reader.hpp"
#include "image/png_writer.hpp"
#include "tensors/safetensors.hpp"

namespace vitattn::fuzz {
namespace {

// A broken invariant: print it and abort, which libFuzzer records as a crash and the
// replay test as a failure (the process dies).
void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz self-check failed: %s\n", what);
  std::abort();
}

// Every refusal must be one line naming its source first, as the CLI prints it.
void require_names(const Error& e, const std::string& source) {
  const std::string msg = e.what();
  require(msg.rfind(source + ": ", 0) == 0, "error message does not start with the source name");
  require(msg.find('\n') == std::string::npos, "error message spans several lines");
}

bool same_bits(const float* a, const float* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0; }

template <class M>
bool same_matrix(const M& a, const M& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && same_bits(a.data(), b.data(), static_cast<std::size_t>(a.size()));
}

bool is_float_dtype(tensors::DType t) {
  return t == tensors::DType::F32 || t == tensors::DType::F16 || t == tensors::DType::BF16 || t == tensors::DType::F64;
}

// ---- .npy header reader, independent of encode_npy ------------------------------------------

struct NpyHeader {
  std::string descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<std::uint64_t>> shape;
  std::size_t data_offset = 0;
};

// Reads the Python dict literal numpy writes: {'key': value, ...} with values a quoted string,
// True/False or a tuple of whole numbers. nullopt on anything else.
class DictReader {
 public:
  DictReader(const char* p, const char* end) : p_(p), end_(end) {}

  std::optional<NpyHeader> read(std::size_t data_offset) {
    NpyHeader h;
    h.data_offset = data_offset;
    std::map<std::string, int> seen;
    spaces();
    if (!eat('{')) return std::nullopt;
    for (;;) {
      spaces();
      if (eat('}')) break;
      const auto key = quoted();
      if (!key || ++seen[*key] > 1) return std::nullopt;
      spaces();
      if (!eat(':')) return std::nullopt;
      spaces();
      if (*key == "descr") {
        const auto v = quoted();
        if (!v) return std::nullopt;
        h.descr = *v;
      } else if (*key == "fortran_order") {
        if (word("True")) h.fortran_order = true;
        else if (word("False")) h.fortran_order = false;
        else return std::nullopt;
      } else if (*key == "shape") {
        h.shape = tuple();
        if (!h.shape) return std::nullopt;
      } else {
        return std::nullopt;  // numpy writes exactly these three keys
      }
      spaces();
      if (eat(',')) continue;
      spaces();
      if (eat('}')) break;
      return std::nullopt;
    }
    // After the dict: padding spaces, then the one newline that ends the header.
    while (p_ < end_ && *p_ == ' ') ++p_;
    if (p_ + 1 != end_ || *p_ != '\n') return std::nullopt;
    return h;
  }

 private:
  void spaces() {
    while (p_ < end_ && *p_ == ' ') ++p_;
  }
  bool eat(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  std::optional<std::string> quoted() {
    if (!eat('\'')) return std::nullopt;
    std::string s;
    while (p_ < end_ && *p_ != '\'') s += *p_++;
    if (!eat('\'')) return std::nullopt;
    return s;
  }
  std::optional<std::uint64_t> number() {
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return std::nullopt;
    std::uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, static_cast<unsigned>(*p_ - '0'), &v))
        return std::nullopt;
      ++p_;
    }
    return v;
  }
  std::optional<std::vector<std::uint64_t>> tuple() {
    if (!eat('(')) return std::nullopt;
    std::vector<std::uint64_t> dims;
    for (;;) {
      spaces();
      if (eat(')')) return dims;
      const auto n = number();
      if (!n) return std::nullopt;
      dims.push_back(*n);
      spaces();
      if (eat(',')) continue;
      spaces();
      if (eat(')')) return dims;
      return std::nullopt;
    }
  }

  const char* p_;
  const char* end_;
};

std::optional<NpyHeader> read_npy_header(const std::vector<std::uint8_t>& b) {
  static const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (b.size() < 10 || std::memcmp(b.data(), magic, 6) != 0) return std::nullopt;
  if (b[6] != 1 || b[7] != 0) return std::nullopt;  // version 1.0
  const std::size_t header_len = static_cast<std::size_t>(b[8]) | static_cast<std::size_t>(b[9]) << 8;
  if (10 + header_len > b.size()) return std::nullopt;
  const char* text = reinterpret_cast<const char*>(b.data() + 10);
  return DictReader(text, text + header_len).read(10 + header_len);
}

// The bytes through the binary's own path (open_model's every step after reading the file):
// the format by name and magic, family detection, load, validation, class names from the
// metadata (asked for, so that a classifier's "classes" are read as --top reads them).
VitModel open_bytes(std::vector<std::uint8_t> bytes, const std::string& name) {
  model::ModelRequest request;
  request.labels = true;
  return model::open_model_bytes(std::move(bytes), name, request).model;
}

}  // namespace

Outcome safetensors_input(const std::uint8_t* data, std::size_t size) {
  const std::string source = "fuzz.safetensors";
  std::vector<std::uint8_t> bytes(data, data + size);
  try {
    const tensors::TensorFile st = tensors::TensorFile::parse(bytes, source);
    for (const auto& [name, info] : st.tensors()) {
      require(st.find(name) == &info, "find() does not return the listed tensor");
      try {
        const std::vector<float> v = st.floats(name);
        require(is_float_dtype(info.dtype), "floats() read a tensor whose dtype is not a float type");
        require(v.size() == info.element_count(), "floats() returned a different number of values than the shape");
        const std::vector<float> w = st.floats(name, info.shape);
        require(w.size() == v.size() && same_bits(v.data(), w.data(), v.size()),
                "floats(name, shape) differs from floats(name)");
      } catch (const Error& e) {
        require_names(e, source);
        require(!is_float_dtype(info.dtype), "floats() refused a float tensor that parse() accepted");
      }
    }
  } catch (const Error& e) {
    require_names(e, source);
    return Outcome::refused;
  }

  VitModel m;
  try {
    m = open_bytes(std::move(bytes), source);
  } catch (const Error& e) {
    require_names(e, source);
    return Outcome::refused;
  }
  if (!model::has_single_head_layout(m)) return Outcome::accepted;
  // What --save-model writes from a loaded model must open again, bit for bit (a bias the
  // file left out is written as zeros).
  VitModel back;
  try {
    back = open_bytes(model::encode_model(m), "round-trip.safetensors");
  } catch (const Error& e) {
    std::fprintf(stderr, "round trip refused: %s\n", e.what());
    require(false, "a loaded model, saved again, is refused by the loader");
  }
  const auto or_zeros = [](const RowVector& v, Eigen::Index n) { return v.size() ? v : RowVector(RowVector::Zero(n)); };
  const EncoderBlock &a = m.blocks.front(), &b = back.blocks.front();
  require(back.patch_size == m.patch_size && model::has_single_head_layout(back), "round trip changed the layout");
  require(same_matrix(back.w_patch, m.w_patch) && same_matrix(back.b_patch, or_zeros(m.b_patch, m.d_model())) &&
              same_matrix(back.cls_token, m.cls_token) && same_matrix(back.pos_embed, m.pos_embed) &&
              same_matrix(b.w_qkv, a.w_qkv) && same_matrix(b.b_qkv, or_zeros(a.b_qkv, a.w_qkv.rows())),
          "round trip changed a tensor");
  require(same_bits(back.norm.mean.data(), m.norm.mean.data(), 3) && same_bits(back.norm.std.data(), m.norm.std.data(), 3),
          "round trip changed mean or std");
  return Outcome::accepted;
}

Outcome image_input(const std::uint8_t* data, std::size_t size) {
  const std::string source = "fuzz.image";
  cv::Mat bgr;
  try {
    bgr = image::decode_image(std::vector<std::uint8_t>(data, data + size), source, kImageMaxPixels);
  } catch (const Error& e) {
    require_names(e, source);
    return Outcome::refused;
  }
  require(!bgr.empty(), "decode_image returned an empty image");
  require(bgr.type() == CV_8UC3, "decode_image returned something other than 8-bit BGR");
  require(static_cast<std::uint64_t>(bgr.total()) <= kImageMaxPixels, "decode_image returned an image over the cap");
  // --max-pixels is applied to the size read from the header, before OpenCV allocates the
  // image. That only holds if every format OpenCV decoded has its size read first, and if the
  // header never claims fewer pixels than the decoder then produces.
  const auto header = image::read_image_size(std::span<const std::uint8_t>(data, size));
  require(header.has_value(), "OpenCV decoded an image whose size read_image_size could not read first");
  require(static_cast<std::uint64_t>(bgr.total()) <= image::pixel_count(*header),
          "the decoded image has more pixels than read_image_size found in the header");
  // The next step of every image: resize and normalise (a small S keeps each run quick).
  const ImageTensor t = image::preprocess(bgr, 16, Normalization{});
  require(t.height == 16 && t.width == 16 && t.chw.size() == 3 * 16 * 16, "preprocess returned the wrong size");
  for (float v : t.chw) require(std::isfinite(v), "preprocess produced a non-finite value");
  return Outcome::accepted;
}

Outcome npy_input(const std::uint8_t* data, std::size_t size) {
  // Bytes 0-3 and 4-7: rows and columns (u32 little-endian, missing bytes are zero); the rest,
  // repeated as needed, the float32 bit patterns (NaN payloads and infinities included). A
  // zero dimension keeps the other one as is (up to 2^32 − 1, no allocation); otherwise
  // both are folded into 1..256 so a run stays small.
  std::uint8_t head[8] = {};
  if (size > 0) std::memcpy(head, data, size < 8 ? size : 8);
  std::uint32_t r = 0, c = 0;
  for (int i = 3; i >= 0; --i) {
    r = r << 8 | head[i];
    c = c << 8 | head[4 + i];
  }
  Eigen::Index rows = r, cols = c;
  if (r != 0 && c != 0) {
    rows = 1 + r % 256;
    cols = 1 + c % 256;
  }
  Matrix m(rows, cols);
  const std::size_t n = static_cast<std::size_t>(m.size());
  const std::size_t payload = size > 8 ? (size - 8) / 4 * 4 : 0;
  if (n > 0) {
    auto* out = reinterpret_cast<std::uint8_t*>(m.data());
    if (payload == 0)
      std::memset(out, 0, n * 4);
    else
      for (std::size_t i = 0; i < n * 4; ++i) out[i] = data[8 + i % payload];
  }

  const std::vector<std::uint8_t> npy = tensors::encode_npy(m);
  const auto h = read_npy_header(npy);
  require(h.has_value(), "encode_npy wrote a header the .npy reader cannot parse");
  require(h->data_offset % 64 == 0, "the data of the .npy file do not start 64-byte aligned");
  require(h->descr == "<f4", "descr is not '<f4'");
  require(h->fortran_order == false, "fortran_order is not False");
  require(h->shape.has_value() && h->shape->size() == 2, "shape is not a 2-tuple");
  require((*h->shape)[0] == static_cast<std::uint64_t>(rows) && (*h->shape)[1] == static_cast<std::uint64_t>(cols),
          "shape does not match the matrix");
  require(npy.size() == h->data_offset + n * 4, "file size is not header + rows·cols·4 bytes");
  require(n == 0 || std::memcmp(npy.data() + h->data_offset, m.data(), n * 4) == 0, "data bytes differ");
  return Outcome::accepted;
}

Outcome npy_read_input(const std::uint8_t* data, std::size_t size) {
  const std::string source = "input.npy";
  tensors::NpyArray a;
  try {
    a = tensors::parse_npy(std::vector<std::uint8_t>(data, data + size), source);
  } catch (const Error& e) {
    require_names(e, source);
    return Outcome::refused;
  }
  std::uint64_t count = 1;
  for (auto n : a.shape) count *= n;
  require(count == a.values.size(), "parse_npy returned a value count that does not match its shape");
  const tensors::NpyArray back = tensors::parse_npy(tensors::encode_npy(a.values.data(), a.shape), "again.npy");
  require(back.shape == a.shape, "encode_npy → parse_npy changed the shape");
  require(same_bits(back.values.data(), a.values.data(), a.values.size()), "encode_npy → parse_npy changed the values");
  return Outcome::accepted;
}

Outcome pth_input(const std::uint8_t* data, std::size_t size) {
  const std::string source = "fuzz.pth";
  const std::vector<std::uint8_t> bytes(data, data + size);
  try {
    const tensors::TensorFile st = tensors::parse_pth(bytes, source);
    for (const auto& [name, info] : st.tensors()) {
      require(is_float_dtype(info.dtype), "parse_pth kept a tensor whose dtype is not a float type");
      const std::vector<float> v = st.floats(name, info.shape);  // must not throw: the reader checked it
      require(v.size() == info.element_count(), "floats() returned a different number of values than the shape");
    }
    // Opened as the binary opens a .pth; it may be refused, but only by Error.
    try {
      (void)open_bytes(bytes, source);
    } catch (const Error& e) {
      require_names(e, source);
    }
  } catch (const Error& e) {
    require_names(e, source);
    return Outcome::refused;
  }
  return Outcome::accepted;
}

Outcome png_input(const std::uint8_t* data, std::size_t size) {
  std::uint8_t head[7] = {};
  if (size > 0) std::memcpy(head, data, size < 7 ? size : 7);
  const int width = (1 + head[0] % 64) * (1 + head[1] % 4);  // up to 256: rows longer than a filter's reach
  const int height = 1 + head[2] % 64;
  const int channels = head[3] % 3 == 0 ? 1 : head[3] % 3 == 1 ? 3 : 4;
  constexpr image::PngFilter filters[] = {image::PngFilter::none, image::PngFilter::sub, image::PngFilter::up,
                                       image::PngFilter::paeth, image::PngFilter::adaptive};
  // level -1: the own Huffman-only deflate; 0-3: libdeflate
  const image::PngOptions options{filters[head[4] % 5], static_cast<int>(head[5] % 5) - 1, 1 + static_cast<std::size_t>(head[6]) * 64};
  cv::Mat image(height, width, CV_8UC(channels));
  const std::size_t n = image.total() * image.elemSize();
  const std::size_t payload = size > 7 ? size - 7 : 0;
  for (std::size_t i = 0; i < n; ++i) image.data[i] = payload == 0 ? 0 : data[7 + i % payload];

  const std::vector<std::uint8_t> png = image::encode_png(image, options);
  const cv::Mat back = cv::imdecode(png, cv::IMREAD_UNCHANGED);
  require(!back.empty(), "libpng cannot decode the encoder's output");
  require(back.size() == image.size() && back.type() == image.type(), "libpng decodes another size or type");
  require(cv::norm(back, image, cv::NORM_INF) == 0.0, "libpng decodes other pixels than were encoded");
  require(image::encode_png(image, options) == png, "encoding the same image twice gave different bytes");
  return Outcome::accepted;
}

Target target_by_name(std::string_view name) {
  if (name == "pth") return pth_input;
  if (name == "png") return png_input;
  if (name == "npy_read") return npy_read_input;
  if (name == "safetensors") return safetensors_input;
  if (name == "image") return image_input;
  if (name == "npy") return npy_input;
  if (name == "serve_request") return serve_request_input;
  if (name == "clip_text") return clip_text_input;
  return nullptr;
}

}  // namespace vitattn::fuzz
