#pragma once
// Zero-shot class embeddings (core/prompt_ensemble.hpp) with a cache across runs: the
// ensemble of ImageNet's 1000 names × 80 templates is 80,000 text encodings, the same every
// run of one model, so its (classes, E) result is kept in a file and read back.
//
// The key: what makes the embeddings, and nothing else.
//   - The model: the XXH64 of the text tower's tensors and settings (text_tower_identity),
//     not the file's path, size or time stamp. It costs one pass over the tower's weights at
//     memory speed, which is what encoding a single prompt reads anyway (the ensemble reads
//     them once per prompt), and it is safe where a path and mtime are not: a checkpoint
//     rewritten in place within the time stamp's resolution, or copied, or converted
//     (.pth → safetensors, OpenAI → HF names) of the same weights gives the right answer.
//   - The tokeniser's identity (the digest of CLIP's merges file, text::clip_tokenizer_identity,
//     or of SigLIP's spiece.model), and
//     the prompts, exactly, class by class (each prompt and each class's count hashed, so the
//     grouping counts), and their token ids: a tokeniser whose code changed its ids misses.
//   - kFormat, raised when the file's layout or the ensemble's arithmetic changes.
// The key record (text, those digests) is stored whole in the file and compared; the file's
// name is the record's XXH64: <cache folder>/text-embeddings/<16 hex>.bin.
//
// The file: a magic line, the key record, rows and columns, the float32 values, and an XXH64
// of all of it. A file that does not read back whole and exactly (truncated, another key, a
// bad checksum, a non-finite value) is never trusted: it is said in `cache_note`, the
// embeddings are computed and the file is written again. Writes are atomic (a temporary
// beside it, then rename: files/file_io.hpp), so a reader sees the old file or the new one.
// Two runs computing the same key at once both compute, both rename: the bytes they write
// are the same (the ensemble is deterministic), so whichever lands last, both agree and
// both succeed. A cache that cannot be written (read-only, full) is a note, not an error.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "core/text_tower.hpp"

namespace vitattn::pipeline {

struct ClassEmbeddingRequest {
  std::vector<std::vector<std::string>> prompts;            // [class][prompt]
  std::vector<std::vector<std::vector<std::int32_t>>> ids;  // [class][prompt] the prompt's token ids
  std::string tokenizer;                                    // the tokeniser's identity
  std::filesystem::path cache_folder;                       // the user's cache folder; empty: no cache
  int threads = 1;                                          // the ensemble's threads
};

enum class CacheUse { off, hit, stored, not_stored };

struct ClassEmbeddings {
  Matrix embeddings;                 // (classes, E), unit rows
  CacheUse cache = CacheUse::off;
  std::filesystem::path cache_file;  // set when the cache is on
  std::string cache_note;            // why a cache file was ignored or could not be written; else empty
};

// The embeddings of the request's classes through `tower`, from the cache when it holds them.
// Throws Error when the ensemble does (core/prompt_ensemble.hpp); never for the cache.
ClassEmbeddings class_embeddings(const TextTower& tower, const ClassEmbeddingRequest& request);

// "xxh64:<16 hex>" of every tensor of the tower (shape and values) and its settings.
std::string text_tower_identity(const TextTower& tower);

}  // namespace vitattn::pipeline
