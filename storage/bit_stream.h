// BitWriter and BitReader: LSB-first bit packing for the fixed-width parts of
// the chunk format (frame-of-reference blocks, Gorilla XOR, bool columns).
// Bit i of the stream is bit (i % 8) of byte (i / 8). BitReader never reads
// past its span: a read that would returns false and consumes nothing.
//
// Thread safety: none; one writer or reader per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulse::storage {

class BitWriter {
 public:
  // Appends to `*out`; the last partial byte is written by Finish().
  explicit BitWriter(std::string* out) : out_(out) {}

  // Writes the low `nbits` (0..64) bits of `value`.
  void Write(uint64_t value, int nbits);
  // Flushes the partial byte (zero padded). Call once, after the last Write.
  void Finish();

 private:
  std::string* out_;
  uint64_t acc_ = 0;  // pending bits, low bits first
  int nacc_ = 0;      // number of pending bits, < 8 between calls
};

class BitReader {
 public:
  explicit BitReader(std::string_view data) : data_(data) {}

  // Reads `nbits` (0..64) bits into the low bits of `*value`.
  bool Read(int nbits, uint64_t* value);
  bool ReadBit(uint64_t* bit) { return Read(1, bit); }
  // Bytes touched so far, the partial last byte included.
  size_t bytes_consumed() const { return (bitpos_ + 7) / 8; }

 private:
  std::string_view data_;
  uint64_t bitpos_ = 0;
};

}  // namespace gpulse::storage
