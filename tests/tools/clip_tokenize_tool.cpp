// CLIP's tokeniser for tests/oracle/test_clip_tokenizer.py: each line of standard input (UTF-8,
// '\n' ends a line) is one text; prints its encode() ids, space-separated, on one line, or
// "error: <message>" when the text is refused. With one argument, a folder, the vocabulary is
// Hugging Face's files there (ClipTokenizer::from_folder) instead of the built-in one; when
// they are refused, "error: <message>" is printed and the exit status is 1.
#include <iostream>
#include <string>

#include "core/error.hpp"
#include "text/clip_tokenizer.hpp"

namespace {

int encode_lines(const vitattn::text::ClipTokenizer& tokenizer) {
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      const auto ids = tokenizer.encode(line);
      std::string out;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ' ';
        out += std::to_string(ids[i]);
      }
      std::cout << out << '\n';
    } catch (const vitattn::Error& e) {
      std::cout << "error: " << e.what() << '\n';
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return encode_lines(vitattn::text::ClipTokenizer());
  try {
    return encode_lines(vitattn::text::ClipTokenizer::from_folder(argv[1]));
  } catch (const vitattn::Error& e) {
    std::cout << "error: " << e.what() << '\n';
    return 1;
  }
}
