// siglip_tokenize_tool: SigLIP's tokenisation by vitattn (text::SiglipTokenizer), for the Python
// test that compares it with SentencePiece's own Python encoder after HF's steps
// (tests/oracle/test_siglip_tokenizer.py).
//
//   siglip_tokenize_tool SPIECE_MODEL [CONTEXT [truncate]]
//   siglip_tokenize_tool SPIECE_MODEL --pieces
//   siglip_tokenize_tool --normalize
//
// Reads one text per line of stdin (a line's "\n" is not part of its text) and prints one
// line per text: its ids separated by spaces, or "error: <message>" for a text's Error.
// An Error loading the model: "error: <message>" on stderr, exit 1. With --normalize, no
// model: each text as it goes to SentencePiece (text::siglip_normalized_text, the steps
// before the model), or "error: <message>". With --pieces, one id per line of stdin: its text
// (SiglipTokenizer::token_text), or "error: <message>".
#include <iostream>
#include <string>

#include "core/error.hpp"
#include "text/siglip_tokenizer.hpp"

namespace {

int normalize_lines() {
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << vitattn::text::siglip_normalized_text(line) << "\n";
    } catch (const vitattn::Error& e) {
      std::cout << "error: " << e.what() << "\n";
    }
  }
  return 0;
}

int piece_lines(const vitattn::text::SiglipTokenizer& tokenizer) {
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << tokenizer.token_text(std::stoi(line)) << "\n";
    } catch (const vitattn::Error& e) {
      std::cout << "error: " << e.what() << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--normalize") return normalize_lines();
  if (argc < 2 || argc > 4 || (argc == 4 && std::string(argv[3]) != "truncate")) {
    std::cerr << "usage: siglip_tokenize_tool SPIECE_MODEL [CONTEXT [truncate]] | --normalize\n";
    return 2;
  }
  try {
    const vitattn::text::SiglipTokenizer tokenizer(argv[1]);
    if (argc == 3 && std::string(argv[2]) == "--pieces") return piece_lines(tokenizer);
    const int context = argc >= 3 ? std::stoi(argv[2]) : 64;
    const bool truncate = argc == 4;
    std::string line;
    while (std::getline(std::cin, line)) {
      try {
        std::string out;
        for (const int id : tokenizer.tokenize(line, context, truncate)) {
          if (!out.empty()) out += ' ';
          out += std::to_string(id);
        }
        std::cout << out << "\n";
      } catch (const vitattn::Error& e) {
        std::cout << "error: " << e.what() << "\n";
      }
    }
  } catch (const vitattn::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
