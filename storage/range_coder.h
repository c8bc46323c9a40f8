// RangeEncoder and RangeDecoder: an adaptive binary range coder (the LZMA
// design: 32-bit range, carry propagation through a cached byte) used to
// entropy-code integer residuals (storage/adaptive_int_model.h).
//
// Each binary decision is coded with a Prob, an adaptive probability that
// moves towards every bit it sees (see Prob), so a model
// needs no table in the chunk and follows the data as it changes. Why not
// Huffman or zstd: a chunk is 1,440 values, too few to pay for a code table,
// and a skewed decision (a flat counter, an idle GPU) costs far less than one
// bit here.
//
// The stream has no length of its own: the caller frames it. Decoding reads
// exactly the bytes the encoder wrote; a decoder that would read past its
// span notes the overrun (ok() turns false) and yields zero bits, so garbage
// input is bounded work and never an out-of-bounds read.
//
// Thread safety: none; one coder per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulse::storage {

inline constexpr int kProbBits = 15;
// A probability adapts at rate 1/(n+2) after n observations, so it starts as
// a running average (learns fast from few values) and settles to an
// exponential window of about kProbWindow values (follows drift).
inline constexpr int kProbWindow = 18;

struct Prob {
  uint16_t p = 1u << (kProbBits - 1);  // P(bit == 0) in units of 2^-kProbBits
  uint16_t n = 0;                      // observations, saturating at kProbWindow
};

class RangeEncoder {
 public:
  explicit RangeEncoder(std::string* out) : out_(out) {}

  void EncodeBit(Prob* prob, unsigned bit);
  // `nbits` (0..64) bits of `value`, high first, each with probability 1/2.
  void EncodeDirect(uint64_t value, int nbits);
  // Encodes the low `nbits` of `value` high first with a binary tree of
  // adaptive probabilities: probs[1 .. 2^nbits - 1] are used.
  void EncodeTree(Prob* probs, int nbits, uint32_t value);
  // Writes the final bytes. Call once.
  void Finish();

 private:
  void ShiftLow();

  std::string* out_;
  uint64_t low_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  uint8_t cache_ = 0;
  uint64_t cache_size_ = 1;
  bool first_ = true;  // the first byte LZMA emits is always 0: not stored
};

class RangeDecoder {
 public:
  explicit RangeDecoder(std::string_view in);

  unsigned DecodeBit(Prob* prob);
  uint64_t DecodeDirect(int nbits);
  uint32_t DecodeTree(Prob* probs, int nbits);

  // False once the decoder needed bytes beyond its span.
  bool ok() const { return !overrun_; }
  // True when every byte of the span was used, as for a well-formed stream.
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  uint8_t NextByte();

  std::string_view in_;
  size_t pos_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  uint32_t code_ = 0;
  bool overrun_ = false;
};

}  // namespace gpulse::storage
