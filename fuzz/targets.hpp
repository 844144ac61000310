#pragma once
// The fuzz entry points. The libFuzzer binaries (fuzz/*_fuzzer.cpp, clang only) and the
// replay test (fuzz/replay.cpp, every build) call these same functions, so what the fuzzers
// exercise and what ctest replays cannot drift apart.
//
// Each takes arbitrary bytes. An input the tool refuses with vitattn::Error is a normal
// outcome (Outcome::refused). Anything else is a finding: a crash or sanitizer report,
// another exception escaping, or a failed self-check (which aborts with a message).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vitattn::fuzz {

enum class Outcome { accepted, refused };

// The bytes as a safetensors file: TensorFile::parse, every tensor read back with floats()
// (with and without its own shape), then the model opened as the binary opens a file
// (open_model_bytes: open_model's steps after the read). A single-head model that opens must
// survive encode_model → open_model_bytes bit for bit. accepted = the model opened.
Outcome safetensors_input(const std::uint8_t* data, std::size_t size);

// The bytes as an image file through decode_image (header checks, size cap kImageMaxPixels,
// OpenCV decode), then preprocess. accepted = decoded to 8-bit BGR within the cap.
Outcome image_input(const std::uint8_t* data, std::size_t size);
inline constexpr std::uint64_t kImageMaxPixels = 4'000'000;

// A matrix shape and values derived from the bytes, written with encode_npy, and the result
// parsed back by an independent little .npy header reader: magic, version, alignment, dict
// keys, shape and the data bytes must all match. Always accepted (no input is invalid).
Outcome npy_input(const std::uint8_t* data, std::size_t size);

// The bytes as a .npy file through parse_npy (the reader behind `vitattn forward`). What it
// accepts must have as many values as its shape says, and must survive encode_npy →
// parse_npy with the same shape and bits. accepted = read.
Outcome npy_read_input(const std::uint8_t* data, std::size_t size);

// The bytes as a PyTorch checkpoint through parse_pth (zip, restricted pickle, views gathered
// by stride): every tensor it keeps is a float type and reads back with floats() as its shape
// says; then the model opened as the binary opens a .pth (open_model_bytes), which may refuse
// only with Error. accepted = read.
Outcome pth_input(const std::uint8_t* data, std::size_t size);

// vitattn's PNG encoder: the bytes give an image (byte 0: width 1…64 · (1 + byte 1 % 4), byte 2:
// height 1…64, byte 3: grey/BGR/BGRA, byte 4: the filter, byte 5: level 0…3, byte 6: IDAT chunk
// size; the rest, repeated, the pixels). Encoded, then decoded by libpng (cv::imdecode): the
// pixels must come back exactly, and a second encoding must give the same bytes. Always accepted.
Outcome png_input(const std::uint8_t* data, std::size_t size);

// `vitattn serve`'s own request parsing (serve_targets.cpp): the bytes as "METHOD\nName: value\n…\n\n"
// then a decoded query "a=b&c=d". access_refusal's verdict must be a 4xx it documents (or the
// right Host and token), in one line without the token; parse_map_query's typed query, written
// back, must parse to itself. accepted = the query parsed.
Outcome serve_request_input(const std::uint8_t* data, std::size_t size);

// A user's text (the bytes as given: --text, later an upload) through CLIP's tokeniser
// (text_targets.cpp): encode, then tokenize to 77 ids with and without truncate. Refusals are
// one line starting "text". What tokenize returns is 77 ids, <|startoftext|> first, all in the
// vocabulary, zeros only after the closing <|endoftext|>, encode's ids between the marks; with
// truncate a valid text is never refused, without it only a text whose ids do not fit.
// accepted = tokenized without truncating.
Outcome clip_text_input(const std::uint8_t* data, std::size_t size);

using Target = Outcome (*)(const std::uint8_t*, std::size_t);

// "safetensors", "image", "npy", "npy_read", "pth", "png", "serve_request" or "clip_text"; nullptr for any other name.
Target target_by_name(std::string_view name);

}  // namespace vitattn::fuzz
