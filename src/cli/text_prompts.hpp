#pragma once
// Texts as the id rows of a model's text tower: which tokeniser a tower reads, in one place for
// every command that takes texts (forward's and the image command's --text). CLIP's towers read CLIP's byte-pair ids
// (clip.tokenize's rows, the built-in vocabulary); SigLIP's read its SentencePiece model's ids
// (text/siglip_tokenizer.hpp: HF's SiglipTokenizer with padding="max_length"), from the file
// spiece.model beside the weights: the checkpoint's folder, or the hf: snapshot (the hub fetches
// it with the config files).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/open_model.hpp"

namespace vitattn::cli {

// --text's texts in the order given, then --texts-from's lines (one text per line; a line of
// white space only is left out, as is the last line's newline). Throws Error naming the file
// and the line for invalid UTF-8, and for a file that cannot be read.
std::vector<std::string> prompt_texts(const std::vector<std::string>& texts, const std::string& texts_from);

// Where a SigLIP text tower's SentencePiece model is looked for: beside the weights file.
std::filesystem::path sentencepiece_model_path(const model::OpenedModel& opened);

// Each text's ids, exactly the tower's context long. `option` names the flag in messages
// ("--text"). Throws Error in one line: the model has no text tower (why, as the loader said),
// an empty text, SigLIP's spiece.model not there (naming where it looked), a text over the
// context unless `truncate` (then cut as clip.tokenize(truncate=True) / HF's truncation=True cut
// it: the first context − 1 ids, then the end token).
std::vector<std::vector<std::int32_t>> text_id_rows(const model::OpenedModel& opened, const std::vector<std::string>& texts,
                                                    bool truncate, const std::string& option);

// The opened model's tokeniser, loaded once (SigLIP's from its spiece.model): a text's ids, the
// tower's context long, as text_id_rows gives them; and its identity, for caches keyed by what
// made the ids: CLIP's built-in merges ("clip-bpe:<hex>", text::clip_tokenizer_identity) or the
// XXH64 of the spiece.model file ("spiece:<hex>"). Throws text_id_rows' Error for a SigLIP
// tokeniser that is not there; `ids` throws for a text over the context unless `truncate`.
struct TowerTokenizer {
  std::function<std::vector<std::int32_t>(const std::string& text, bool truncate)> ids;
  std::string identity;
};
TowerTokenizer tower_tokenizer(const model::OpenedModel& opened);

// Each row's word positions (core/text_tower.hpp word_span) as the tower's tokeniser decodes
// each id alone: CLIP's BPE token with its word end as a trailing space (ClipTokenizer::
// token_text), SigLIP's SentencePiece piece with "▁" as a space (SiglipTokenizer::token_text).
// Throws text_id_rows' Errors for a tokeniser that is not there.
std::vector<std::vector<std::string>> word_token_texts(const model::OpenedModel& opened,
                                                       const std::vector<std::vector<std::int32_t>>& rows);

// Each row's positions 0 … E as word_token_texts decodes them, E the end token after the words
// (CLIP's end-of-text, SigLIP's first "</s>"): the tokens the report's text attention view
// shows (CLIP's start-of-text, the words, the end).
std::vector<std::vector<std::string>> prompt_token_texts(const model::OpenedModel& opened,
                                                         const std::vector<std::vector<std::int32_t>>& rows);

// The ids of LeGrad's empty prompt for the opened model's SigLIP tower (its correction:
// core/legrad_text.hpp), or none for any other tower or when `wanted` is false.
std::vector<std::int32_t> legrad_empty_prompt_ids(const model::OpenedModel& opened, bool wanted);

// The image embedding as wide as the text tower's, so that there are logits between them. Throws
// Error naming `flag` and the model otherwise (one place for the check every text option needs).
void check_embedding_widths(const model::OpenedModel& opened, const std::string& flag, const std::string& model_name);

// --class among texts: each value a text, not an index (the texts have no numbers but their
// order, which --text's order already gives). Throws Error naming the value.
void check_text_classes(const std::vector<std::string>& classes);

}  // namespace vitattn::cli
