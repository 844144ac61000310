#include "text/clip_hf_vocabulary.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::text {

namespace {

constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;  // well above CLIP's files; a bigger one is a mistake
constexpr int32_t kEndOfWordOffset = 256;                // a byte character's id → its '</w>' form's

// Built up in place: GCC 12 at -O3 warns a false -Wrestrict on "\"" + std::string(s).
std::string in_quotes(std::string_view s) {
  std::string out = "\"";
  out += files::printable(s);
  out += '"';
  return out;
}

nlohmann::json parse_json(std::string_view text, std::string_view source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(source) + ": not valid JSON (" + files::printable(e.what(), true) + ")");
  }
}

// symbol → id of a JSON object, each id an integer 0…kClipVocabularySize-1 used once.
std::unordered_map<std::string, int32_t> vocabulary_ids(const nlohmann::json& object, std::string_view source) {
  if (!object.is_object()) throw Error(std::string(source) + ": the vocabulary is not a JSON object of symbol → id");
  if (object.size() != static_cast<size_t>(kClipVocabularySize))
    throw Error(std::string(source) + ": " + std::to_string(object.size()) + " symbols, CLIP's vocabulary has " +
                std::to_string(kClipVocabularySize));
  std::unordered_map<std::string, int32_t> ids;
  std::vector<bool> used(static_cast<size_t>(kClipVocabularySize), false);
  for (const auto& [symbol, value] : object.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= kClipVocabularySize)
      throw Error(std::string(source) + ": the id of " + in_quotes(symbol) + " is " + files::printable(value.dump(), true) +
                  ", not an integer 0…" + std::to_string(kClipVocabularySize - 1));
    const auto id = value.get<int32_t>();
    if (used[static_cast<size_t>(id)]) throw Error(std::string(source) + ": id " + std::to_string(id) + " is given twice");
    used[static_cast<size_t>(id)] = true;
    ids.emplace(symbol, id);
  }
  return ids;
}

// The id the tokeniser assumes for `symbol`, checked.
void expect_id(const ClipVocabulary& v, const std::string& symbol, int32_t id, std::string_view source) {
  const auto it = v.id_of.find(symbol);
  if (it == v.id_of.end()) throw Error(std::string(source) + ": no symbol " + in_quotes(symbol));
  if (it->second != id)
    throw Error(std::string(source) + ": " + in_quotes(symbol) + " is id " + std::to_string(it->second) + ", CLIP's is " +
                std::to_string(id));
}

// byte_id from the byte characters' ids, each '</w>' form checked to sit 256 ids later.
void set_byte_ids(ClipVocabulary& v, std::string_view source) {
  const auto characters = clip_byte_characters();
  for (size_t b = 0; b < 256; ++b) {
    std::string symbol;
    append_utf8(symbol, characters[b]);
    const auto it = v.id_of.find(symbol);
    if (it == v.id_of.end())
      throw Error(std::string(source) + ": no symbol for byte " + std::to_string(b) + " (" + in_quotes(symbol) + ")");
    v.byte_id[b] = it->second;
    expect_id(v, symbol + "</w>", it->second + kEndOfWordOffset, source);
  }
}

ClipVocabulary vocabulary_of(const nlohmann::json& vocab, std::string_view vocab_source, const ClipMergeLines& merges,
                             const std::function<std::string(size_t)>& merge_named) {
  ClipVocabulary v;
  v.id_of = vocabulary_ids(vocab, vocab_source);
  expect_id(v, "<|startoftext|>", kClipStartOfText, vocab_source);
  expect_id(v, "<|endoftext|>", kClipEndOfText, vocab_source);
  set_byte_ids(v, vocab_source);
  add_clip_merges(v, merges, merge_named);
  return v;
}

// model.merges of tokenizer.json: "a b" strings or [a, b] pairs, the first kClipMerges of them.
ClipMergeLines tokenizer_json_merges(const nlohmann::json& merges, std::string_view source) {
  if (!merges.is_array()) throw Error(std::string(source) + ": model.merges is not an array");
  if (merges.size() < static_cast<size_t>(kClipMerges))
    throw Error(std::string(source) + ": model.merges has " + std::to_string(merges.size()) + " merges, CLIP reads " +
                std::to_string(kClipMerges));
  ClipMergeLines out;
  out.reserve(kClipMerges);
  for (size_t i = 0; i < static_cast<size_t>(kClipMerges); ++i) {
    const auto& m = merges[i];
    const auto* text = m.is_string() ? m.get_ptr<const std::string*>() : nullptr;
    const size_t space = text ? text->find(' ') : std::string::npos;
    const bool one_space = space != std::string::npos && space > 0 && space + 1 < text->size() &&
                           text->find(' ', space + 1) == std::string::npos;
    if (one_space) {
      out.emplace_back(std::string_view(*text).substr(0, space), std::string_view(*text).substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(*m[0].get_ptr<const std::string*>(), *m[1].get_ptr<const std::string*>());
    } else {
      throw Error(std::string(source) + ": model.merges[" + std::to_string(i) + "] is not two symbols: " +
                  files::printable(m.dump(), true));
    }
  }
  return out;
}

std::string read_text(const std::filesystem::path& path) {
  const auto bytes = files::read_file(path, kMaxFileBytes);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

ClipVocabulary parse_clip_hf_vocabulary(std::string_view vocab_json, std::string_view vocab_source,
                                        std::string_view merges_text, std::string_view merges_source) {
  if (merges_text.substr(0, 8) != "#version")
    throw Error(std::string(merges_source) + ": line 1 is not the \"#version\" header of Hugging Face's merges.txt");
  return vocabulary_of(parse_json(vocab_json, vocab_source), vocab_source, clip_merge_lines(merges_text, merges_source),
                       clip_merges_file_lines(merges_source));
}

ClipVocabulary parse_clip_tokenizer_json(std::string_view json_text, std::string_view source) {
  const auto json = parse_json(json_text, source);
  const auto model = json.is_object() ? json.find("model") : json.end();
  if (!json.is_object() || model == json.end() || !model->is_object())
    throw Error(std::string(source) + ": no \"model\" object (not a Hugging Face tokenizer.json)");
  if (const auto type = model->find("type"); type != model->end() && *type != "BPE")
    throw Error(std::string(source) + ": model.type is " + files::printable(type->dump(), true) + ", CLIP's is \"BPE\"");
  const auto vocab = model->find("vocab");
  const auto merges = model->find("merges");
  if (vocab == model->end() || merges == model->end()) throw Error(std::string(source) + ": model has no vocab or no merges");
  const std::string vocab_source = std::string(source) + ": model.vocab";
  const auto merge_named = [source = std::string(source)](size_t i) {
    return source + ": model.merges[" + std::to_string(i) + "]";
  };
  return vocabulary_of(*vocab, vocab_source, tokenizer_json_merges(*merges, source), merge_named);
}

ClipVocabulary read_clip_hf_vocabulary(const std::filesystem::path& folder) {
  const auto vocab = folder / "vocab.json", merges = folder / "merges.txt", tokenizer = folder / "tokenizer.json";
  const auto there = [](const std::filesystem::path& p) {
    std::error_code ec;  // an unreadable folder: "no files", then read_file names what it meets
    return std::filesystem::exists(p, ec);
  };
  if (there(vocab) || there(merges))
    return parse_clip_hf_vocabulary(read_text(vocab), vocab.string(), read_text(merges), merges.string());
  if (there(tokenizer)) return parse_clip_tokenizer_json(read_text(tokenizer), tokenizer.string());
  throw Error(folder.string() + ": no CLIP tokeniser files (vocab.json + merges.txt, or tokenizer.json)");
}

}  // namespace vitattn::text
