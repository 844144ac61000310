#pragma once
// The texts a run asks about (--text, --texts-from) and their token ids for the model's text
// tower: read, checked and tokenised before any image, so that a bad text is one error line
// and exit 2 with nothing written.
#include <cstdint>
#include <string>
#include <vector>

#include "model/open_model.hpp"

namespace vitattn::cli {

// --text's texts in the order given, then --texts-from's lines (one text per line; a line of
// white space only is left out, as is the last line's newline). Throws Error naming the file
// and the line for invalid UTF-8, and for a file that cannot be read.
std::vector<std::string> prompt_texts(const std::vector<std::string>& texts, const std::string& texts_from);

// The texts as the tower's token rows, each its context long: CLIP's BPE (clip.tokenize).
// Throws Error, naming the option `flag` and the model: a model without a text tower (saying
// why when the file holds one that could not be read), an empty text, a text over the context
// unless `truncate`, an image embedding of another width than the text embedding.
std::vector<std::vector<std::int32_t>> tokenize_prompts(const model::OpenedModel& opened,
                                                        const std::vector<std::string>& texts, bool truncate,
                                                        const std::string& flag, const std::string& model_name);

// --class among texts: each value a text, not an index (the texts have no numbers but their
// order, which --text's order already gives). Throws Error naming the value.
void check_text_classes(const std::vector<std::string>& classes);

}  // namespace vitattn::cli
