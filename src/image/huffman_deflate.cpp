#include "image/huffman_deflate.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace vitattn::image {
namespace {

using Byte = std::uint8_t;

constexpr int kLiterals = 257;        // bytes 0–255 and end-of-block (256); no length codes are used
constexpr int kEndOfBlock = 256;
constexpr int kMaxCodeLength = 15;    // RFC 1951 §3.2.7
constexpr int kCodeLengthSymbols = 19;
constexpr int kMaxCodeLengthLength = 7;  // the code lengths' own code is sent in 3-bit fields
// The order in which the code lengths' code lengths are sent (§3.2.7).
constexpr int kCodeLengthOrder[kCodeLengthSymbols] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
// A block's header at most: 3 + 5 + 5 + 4 bits, 19 × 3, 258 code lengths of ≤ 7 bits.
constexpr std::size_t kMaxHeaderBytes = (17 + 19 * 3 + 258 * 7) / 8 + 1;

// Canonical codes (§3.2.2) from code lengths, bit-reversed: deflate sends a Huffman code's
// most significant bit first, but packs bits into bytes from the least significant end.
void canonical_codes(const Byte* lengths, int n, std::uint16_t* codes) {
  int count[kMaxCodeLength + 1] = {};
  for (int s = 0; s < n; ++s) ++count[lengths[s]];
  count[0] = 0;
  int next[kMaxCodeLength + 1] = {};
  for (int bits = 1, code = 0; bits <= kMaxCodeLength; ++bits) {
    code = (code + count[bits - 1]) << 1;
    next[bits] = code;
  }
  for (int s = 0; s < n; ++s) {
    const int len = lengths[s];
    if (len == 0) {
      codes[s] = 0;
      continue;
    }
    const int code = next[len]++;
    int reversed = 0;
    for (int b = 0; b < len; ++b) reversed |= ((code >> b) & 1) << (len - 1 - b);
    codes[s] = static_cast<std::uint16_t>(reversed);
  }
}

}  // namespace

void huffman_code_lengths(const std::uint32_t* counts, int n_symbols, int max_length, Byte* lengths) {
  std::vector<std::uint64_t> weight(counts, counts + n_symbols);
  int used = static_cast<int>(std::count_if(weight.begin(), weight.end(), [](std::uint64_t w) { return w > 0; }));
  for (int s = 0; used < 2 && s < n_symbols; ++s)  // inflate wants a complete code: two symbols at least
    if (weight[static_cast<std::size_t>(s)] == 0) {
      weight[static_cast<std::size_t>(s)] = 1;
      ++used;
    }
  using Node = std::pair<std::uint64_t, int>;  // (weight, node); ties broken by node index, so the code is fixed
  std::vector<int> parent(static_cast<std::size_t>(2 * n_symbols), -1);
  for (;;) {
    std::priority_queue<Node, std::vector<Node>, std::greater<>> heap;
    for (int s = 0; s < n_symbols; ++s)
      if (weight[static_cast<std::size_t>(s)] > 0) heap.emplace(weight[static_cast<std::size_t>(s)], s);
    std::fill(parent.begin(), parent.end(), -1);
    int next = n_symbols;
    while (heap.size() > 1) {
      const Node a = heap.top();
      heap.pop();
      const Node b = heap.top();
      heap.pop();
      parent[static_cast<std::size_t>(a.second)] = parent[static_cast<std::size_t>(b.second)] = next;
      heap.emplace(a.first + b.first, next++);
    }
    int deepest = 0;
    for (int s = 0; s < n_symbols; ++s) {
      int depth = 0;
      if (weight[static_cast<std::size_t>(s)] > 0)
        for (int x = s; parent[static_cast<std::size_t>(x)] >= 0; x = parent[static_cast<std::size_t>(x)]) ++depth;
      lengths[s] = static_cast<Byte>(std::min(depth, 255));
      deepest = std::max(deepest, depth);
    }
    if (deepest <= max_length) return;
    // Too deep: flatten the counts (halve them, rounding up, so none drops to 0) and build
    // again. Each round brings the weights closer; equal weights give a balanced tree.
    for (auto& w : weight)
      if (w > 0) w = (w + 1) / 2;
  }
}

HuffmanZlibWriter::HuffmanZlibWriter(std::size_t total_bytes, std::size_t max_blocks)
    : capacity_(2 + max_blocks * kMaxHeaderBytes + total_bytes / 8 * kMaxCodeLength + 2 * kMaxCodeLength + 4 + 16),
      limit_(total_bytes),
      blocks_left_(max_blocks) {
  out_.reset(new Byte[capacity_]);
  at_ = out_.get();
  // zlib header (RFC 1950): deflate with a 32 KiB window (0x78), no dictionary, "fastest"
  // level, and the check bits that make 0x7801 a multiple of 31.
  *at_++ = 0x78;
  *at_++ = 0x01;
}

// Appends n ≤ 32 bits. bit_count_ stays below 32 between calls, so the buffer never holds
// more than 63; 8 bytes are stored at once and the pointer moves by the 4 that are whole.
inline void HuffmanZlibWriter::put(std::uint64_t bits, int n) {
  bit_buffer_ |= bits << bit_count_;
  bit_count_ += n;
  if (bit_count_ >= 32) {
    std::memcpy(at_, &bit_buffer_, 8);
    at_ += 4;
    bit_buffer_ >>= 32;
    bit_count_ -= 32;
  }
}

// The block header of §3.2.7: BFINAL, BTYPE = 2 (dynamic codes), HLIT, HDIST, HCLEN, the code
// lengths' code, then the 257 literal/end code lengths and one distance code length (0: no
// distances are used).
void HuffmanZlibWriter::write_header(const Byte* lit_lengths, bool last) {
  Byte all[kLiterals + 1];
  std::memcpy(all, lit_lengths, kLiterals);
  all[kLiterals] = 0;
  std::uint32_t counts[kCodeLengthSymbols] = {};
  for (Byte l : all) ++counts[l];
  Byte cl_lengths[kCodeLengthSymbols];
  huffman_code_lengths(counts, kCodeLengthSymbols, kMaxCodeLengthLength, cl_lengths);
  std::uint16_t cl_codes[kCodeLengthSymbols];
  canonical_codes(cl_lengths, kCodeLengthSymbols, cl_codes);
  int hclen = kCodeLengthSymbols;
  while (hclen > 4 && cl_lengths[kCodeLengthOrder[hclen - 1]] == 0) --hclen;

  put(last ? 1 : 0, 1);
  put(2, 2);
  put(kLiterals - 257, 5);  // HLIT
  put(0, 5);                // HDIST: one distance code
  put(static_cast<std::uint64_t>(hclen - 4), 4);
  for (int i = 0; i < hclen; ++i) put(cl_lengths[kCodeLengthOrder[i]], 3);
  for (Byte l : all) put(cl_codes[l], cl_lengths[l]);
}

void HuffmanZlibWriter::add_block(const Byte* data, std::size_t n, bool last) {
  if (finished_ || n == 0 || n > limit_ - consumed_ || blocks_left_ == 0)
    throw Error("Huffman deflate: block does not fit the stream it was sized for");
  consumed_ += n;
  --blocks_left_;

  // Byte counts, four tables so that runs of one byte value do not wait on the same counter.
  std::uint32_t hist[4][256] = {};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++hist[0][data[i]];
    ++hist[1][data[i + 1]];
    ++hist[2][data[i + 2]];
    ++hist[3][data[i + 3]];
  }
  for (; i < n; ++i) ++hist[0][data[i]];
  std::uint32_t counts[kLiterals];
  for (int s = 0; s < 256; ++s) counts[s] = hist[0][s] + hist[1][s] + hist[2][s] + hist[3][s];
  counts[kEndOfBlock] = 1;

  Byte lengths[kLiterals];
  huffman_code_lengths(counts, kLiterals, kMaxCodeLength, lengths);
  std::uint16_t codes[kLiterals];
  canonical_codes(lengths, kLiterals, codes);
  write_header(lengths, last);

  // The bytes, two codes (≤ 30 bits) per step into the 64-bit buffer, which then holds ≤ 61.
  std::uint32_t table[256];  // code | length << 16
  for (int s = 0; s < 256; ++s) table[s] = codes[s] | static_cast<std::uint32_t>(lengths[s]) << 16;
  std::uint64_t buffer = bit_buffer_;
  int count = bit_count_;
  Byte* at = at_;
  i = 0;
  for (; i + 2 <= n; i += 2) {
    const std::uint32_t a = table[data[i]], b = table[data[i + 1]];
    buffer |= static_cast<std::uint64_t>(a & 0xffff) << count;
    count += static_cast<int>(a >> 16);
    buffer |= static_cast<std::uint64_t>(b & 0xffff) << count;
    count += static_cast<int>(b >> 16);
    if (count >= 32) {
      std::memcpy(at, &buffer, 8);
      at += 4;
      buffer >>= 32;
      count -= 32;
    }
  }
  bit_buffer_ = buffer;
  bit_count_ = count;
  at_ = at;
  if (i < n) put(table[data[i]] & 0xffff, static_cast<int>(table[data[i]] >> 16));
  put(codes[kEndOfBlock], lengths[kEndOfBlock]);
  adler_ = libdeflate_adler32(adler_, data, n);

  if (!last) return;
  finished_ = true;
  // Pad the last byte, then the Adler-32 of all the input, big-endian (RFC 1950).
  while (bit_count_ > 0) {
    *at_++ = static_cast<Byte>(bit_buffer_);
    bit_buffer_ >>= 8;
    bit_count_ = std::max(0, bit_count_ - 8);
  }
  for (int shift = 24; shift >= 0; shift -= 8) *at_++ = static_cast<Byte>(adler_ >> shift);
  size_ = static_cast<std::size_t>(at_ - out_.get());
}

}  // namespace vitattn::image
