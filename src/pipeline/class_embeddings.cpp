#include "pipeline/class_embeddings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

#include "core/error.hpp"
#include "core/prompt_ensemble.hpp"
#include "files/content_hash.hpp"
#include "files/file_io.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

// The file's first bytes; the digit is kFormat's.
constexpr std::string_view kMagic = "vitattn text embeddings 1\n";
constexpr int kFormat = 1;
constexpr std::uint64_t kMaxCacheBytes = 1ull << 32;  // far above any (classes, E) a model has

void add_matrix(files::Digest64& d, const Eigen::Map<const Matrix>& m) {
  const std::int64_t shape[2] = {m.rows(), m.cols()};
  d.add(shape, sizeof shape).add(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
}
void add_row(files::Digest64& d, const RowVector& v) {
  add_matrix(d, Eigen::Map<const Matrix>(v.data(), 1, v.size()));
}
void add_norm(files::Digest64& d, const LayerNorm& n) {
  add_row(d, n.weight);
  add_row(d, n.bias);
}

// The key record: what the embeddings are a function of (the header says why each part).
std::string key_record(const TextTower& tower, const ClassEmbeddingRequest& r) {
  files::Digest64 prompts, ids;
  for (std::size_t c = 0; c < r.prompts.size(); ++c) {
    const std::uint64_t n = r.prompts[c].size();
    prompts.add(&n, sizeof n);
    for (const std::string& p : r.prompts[c]) prompts.add_sized(p);
  }
  for (const auto& of_class : r.ids) {
    const std::uint64_t n = of_class.size();
    ids.add(&n, sizeof n);
    for (const std::vector<std::int32_t>& row : of_class)
      ids.add_sized({reinterpret_cast<const char*>(row.data()), row.size() * sizeof(std::int32_t)});
  }
  return fmt::format("format {}\ntower {}\ntokenizer {}\nclasses {}\nprompts xxh64:{}\nids xxh64:{}\n", kFormat,
                     text_tower_identity(tower), r.tokenizer, r.prompts.size(), prompts.hex(), ids.hex());
}

void append(std::string& out, const void* data, std::size_t size) {
  out.append(static_cast<const char*>(data), size);
}

// magic, key length, key, rows, cols, values, XXH64 of everything before it.
std::string cache_bytes(const std::string& key, const Matrix& m) {
  std::string out(kMagic);
  const std::uint64_t key_size = key.size(), rows = static_cast<std::uint64_t>(m.rows()),
                      cols = static_cast<std::uint64_t>(m.cols());
  append(out, &key_size, sizeof key_size);
  out += key;
  append(out, &rows, sizeof rows);
  append(out, &cols, sizeof cols);
  append(out, m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
  const std::uint64_t sum = files::Digest64().add(out.data(), out.size()).digest();
  append(out, &sum, sizeof sum);
  return out;
}

// Reads a uint64 at `at`, moving past it; false past the end.
bool take(std::string_view bytes, std::size_t& at, std::uint64_t& value) {
  if (bytes.size() - at < sizeof value) return false;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  at += sizeof value;
  return true;
}

std::optional<Matrix> refused(std::string& why, std::string reason) {
  why = std::move(reason);
  return std::nullopt;
}

// The matrix of a cache file's bytes when they are whole and for `key` and (rows, cols); else
// nothing, with the reason in `why`.
std::optional<Matrix> parse_cache(std::string_view bytes, const std::string& key, Eigen::Index rows, Eigen::Index cols,
                                  std::string& why) {
  std::size_t at = kMagic.size();
  std::uint64_t key_size = 0, r = 0, c = 0, sum = 0;
  if (!bytes.starts_with(kMagic)) return refused(why, "not a text-embedding cache file");
  if (!take(bytes, at, key_size) || bytes.size() - at < key_size) return refused(why, "truncated");
  if (bytes.substr(at, key_size) != key) return refused(why, "holds another key");
  at += key_size;
  if (!take(bytes, at, r) || !take(bytes, at, c)) return refused(why, "truncated");
  if (r != static_cast<std::uint64_t>(rows) || c != static_cast<std::uint64_t>(cols))
    return refused(why, fmt::format("holds [{}, {}], expected [{}, {}]", r, c, rows, cols));
  const std::size_t values = static_cast<std::size_t>(r * c) * sizeof(float);
  if (bytes.size() - at != values + sizeof sum) return refused(why, "truncated or too long");
  std::memcpy(&sum, bytes.data() + at + values, sizeof sum);
  if (files::Digest64().add(bytes.data(), at + values).digest() != sum) return refused(why, "checksum mismatch");
  Matrix m(rows, cols);
  std::memcpy(m.data(), bytes.data() + at, values);
  if (!m.allFinite()) return refused(why, "holds a non-finite value");
  return m;
}

std::optional<Matrix> read_cache(const fs::path& file, const std::string& key, Eigen::Index rows, Eigen::Index cols,
                                 std::string& note) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::vector<std::uint8_t> bytes;
  try {
    bytes = files::read_file(file, kMaxCacheBytes);
  } catch (const Error& e) {
    note = fmt::format("ignored the cache file ({})", e.what());
    return std::nullopt;
  }
  std::string why;
  std::optional<Matrix> m =
      parse_cache({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, key, rows, cols, why);
  if (!m) note = fmt::format("ignored the cache file {}: {}", files::display(file), why);
  return m;
}

// Writes the cache file; false, with the reason in `note`, when it cannot.
bool write_cache(const fs::path& file, const std::string& key, const Matrix& m, std::string& note) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);  // another run making it at once is fine: it exists
  try {
    const std::string bytes = cache_bytes(key, m);
    files::write_file_atomic(file, bytes.data(), bytes.size());
    return true;
  } catch (const Error& e) {
    note += (note.empty() ? "" : "; ") + fmt::format("could not write the cache ({})", e.what());
    return false;
  }
}

}  // namespace

std::string text_tower_identity(const TextTower& t) {
  files::Digest64 d;
  // Every setting that changes an embedding: SigLIP's mask, pooling and head bias as CLIP's.
  // logit_scale, logit_bias and the probability rule do not change an embedding; they are kept
  // in the key anyway, so that one key never stands for two towers' settings.
  const std::int64_t settings[5] = {t.n_heads, static_cast<std::int64_t>(t.gelu), static_cast<std::int64_t>(t.mask),
                                    static_cast<std::int64_t>(t.pooling), static_cast<std::int64_t>(t.probabilities)};
  d.add(settings, sizeof settings).add(&t.eps, sizeof t.eps).add(&t.logit_scale, sizeof t.logit_scale);
  d.add(&t.logit_bias, sizeof t.logit_bias);
  add_matrix(d, t.token_embedding);
  add_matrix(d, t.positional_embedding);
  for (const EncoderBlock& b : t.blocks) {
    add_norm(d, b.norm1);
    add_matrix(d, b.w_qkv);
    add_row(d, b.b_qkv);
    add_matrix(d, b.w_proj);
    add_row(d, b.b_proj);
    add_row(d, b.ls1);
    add_norm(d, b.norm2);
    add_matrix(d, b.w_fc1);
    add_row(d, b.b_fc1);
    add_matrix(d, b.w_fc2);
    add_row(d, b.b_fc2);
    add_row(d, b.ls2);
  }
  add_norm(d, t.final_norm);
  add_matrix(d, t.w_projection);
  add_row(d, t.b_projection);
  return "xxh64:" + d.hex();
}

ClassEmbeddings class_embeddings(const TextTower& tower, const ClassEmbeddingRequest& r) {
  ClassEmbeddings out;
  const auto rows = static_cast<Eigen::Index>(r.prompts.size());
  std::string key;
  if (!r.cache_folder.empty()) {
    key = key_record(tower, r);
    out.cache_file = r.cache_folder / "text-embeddings" / (files::Digest64().add(key.data(), key.size()).hex() + ".bin");
    if (std::optional<Matrix> cached = read_cache(out.cache_file, key, rows, tower.d_embed(), out.cache_note)) {
      out.embeddings = std::move(*cached);
      out.cache = CacheUse::hit;
      return out;
    }
  }
  out.embeddings = prompt_ensemble(tower, r.ids, r.threads);
  if (!key.empty())
    out.cache = write_cache(out.cache_file, key, out.embeddings, out.cache_note) ? CacheUse::stored : CacheUse::not_stored;
  return out;
}

}  // namespace vitattn::pipeline
