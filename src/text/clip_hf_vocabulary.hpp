#pragma once
// CLIP's vocabulary from Hugging Face's files beside a model: CLIPTokenizer's vocab.json
// (symbol → id) + merges.txt (a "#version" header line, then one merge a line), or, without
// them, tokenizer.json's model.vocab and model.merges ("a b" strings or [a, b] pairs).
// As CLIPTokenizer, only the first kClipMerges merges are read, in file order (= rank).
//
// They must be the vocabulary ClipTokenizer works with (clip_merges.hpp): 49,408 distinct ids
// 0…49407, "<|startoftext|>" 49406 and "<|endoftext|>" 49407, each of the 256 byte characters
// present with its "</w>" form 256 ids after it, each merge's two symbols and their join present.
// Anything else is an Error naming the file and what is wrong.
#include <filesystem>
#include <string_view>

#include "text/clip_merges.hpp"

namespace vitattn::text {

// The vocabulary of a vocab.json text and a merges.txt text; the sources name them in errors.
ClipVocabulary parse_clip_hf_vocabulary(std::string_view vocab_json, std::string_view vocab_source,
                                        std::string_view merges_text, std::string_view merges_source);

// The vocabulary of a tokenizer.json text.
ClipVocabulary parse_clip_tokenizer_json(std::string_view json_text, std::string_view source);

// The vocabulary of the files in `folder`: vocab.json + merges.txt when either is there (then
// both must be), else tokenizer.json; none of them is an Error naming the folder.
ClipVocabulary read_clip_hf_vocabulary(const std::filesystem::path& folder);

}  // namespace vitattn::text
