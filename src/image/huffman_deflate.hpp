#pragma once
// A zlib stream (RFC 1950) whose deflate blocks (RFC 1951) use dynamic Huffman codes and no
// back-references: each block's bytes are counted, a length-limited Huffman code is built
// for them, and every byte is written as its code. There is no match search, which is most
// of a general-purpose deflate's time. On filtered photos (PNG's Paeth filter leaves small
// residuals around 0 and little that repeats), coding the bytes by their frequency is where
// nearly all of the compression is: about libdeflate level 1's size at a fraction of its time
// (bench/run_png_bench.sh). Written here because no Debian library offers a Huffman-only
// deflate this fast (libdeflate and zlib always search for matches; zlib's Z_HUFFMAN_ONLY
// still runs its slow general path). Any inflate reads it.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace vitattn::image {

class HuffmanZlibWriter {
 public:
  // Room for a stream of at most `total_bytes` bytes of input in at most `max_blocks` blocks.
  HuffmanZlibWriter(std::size_t total_bytes, std::size_t max_blocks);

  // One deflate block of n > 0 bytes (its own Huffman code); `last` marks the final block.
  // The blocks together must not exceed total_bytes.
  void add_block(const std::uint8_t* data, std::size_t n, bool last);

  // After the last block: the whole zlib stream (header, blocks, Adler-32).
  const std::uint8_t* data() const { return out_.get(); }
  std::size_t size() const { return size_; }
  std::unique_ptr<std::uint8_t[]> take() { return std::move(out_); }  // the stream's buffer, data() no more

 private:
  void put(std::uint64_t bits, int n);
  void write_header(const std::uint8_t* lit_lengths, bool last);

  std::unique_ptr<std::uint8_t[]> out_;  // not zero-filled: only the pages written are touched
  std::size_t capacity_ = 0, size_ = 0;
  std::uint8_t* at_ = nullptr;
  std::uint64_t bit_buffer_ = 0;  // bits not yet stored, the first at bit 0 (deflate is LSB first)
  int bit_count_ = 0;
  std::uint32_t adler_ = 1;
  std::size_t consumed_ = 0, limit_ = 0, blocks_left_ = 0;
  bool finished_ = false;
};

// Code lengths (≤ max_length) of a Huffman code for symbols with these counts; unused symbols
// (count 0) get 0. At least two symbols get a code, so the code is complete (inflate refuses
// an incomplete one). Exposed for the tests.
void huffman_code_lengths(const std::uint32_t* counts, int n_symbols, int max_length, std::uint8_t* lengths);

}  // namespace vitattn::image
