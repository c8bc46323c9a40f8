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
// The per-bit operations are defined in this header: they are the inner loop
// of chunk encoding and decoding (about 13 calls per value), and a call per
// bit cost more than the coding itself.
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

namespace range_coder_internal {

inline constexpr uint32_t kTopValue = 1u << 24;
inline constexpr uint32_t kProbTotal = 1u << kProbBits;

// kRates.rate[n] = 2^16 / (n + 2): the update step after n observations.
struct RateTable {
  uint32_t rate[kProbWindow + 1];
  constexpr RateTable() : rate() {
    for (int n = 0; n <= kProbWindow; ++n) rate[n] = 65536u / static_cast<uint32_t>(n + 2);
  }
};
inline constexpr RateTable kRates;

// p stays within [1, kProbTotal - 1]: a step never reaches either end.
inline void Update(Prob* prob, unsigned bit) {
  uint32_t rate = kRates.rate[prob->n];
  uint32_t p = prob->p;
  p = bit == 0 ? p + (((kProbTotal - p) * rate) >> 16) : p - ((p * rate) >> 16);
  prob->p = static_cast<uint16_t>(p);
  prob->n = static_cast<uint16_t>(prob->n + (prob->n < kProbWindow));
}

}  // namespace range_coder_internal

class RangeEncoder {
 public:
  explicit RangeEncoder(std::string* out) : out_(out) {}

  void EncodeBit(Prob* prob, unsigned bit) {
    uint32_t bound = (range_ >> kProbBits) * prob->p;
    if (bit == 0) {
      range_ = bound;
    } else {
      low_ += bound;
      range_ -= bound;
    }
    range_coder_internal::Update(prob, bit);
    while (range_ < range_coder_internal::kTopValue) {
      range_ <<= 8;
      ShiftLow();
    }
  }

  // `nbits` (0..64) bits of `value`, high first, each with probability 1/2.
  void EncodeDirect(uint64_t value, int nbits) {
    for (int i = nbits - 1; i >= 0; --i) {
      range_ >>= 1;
      low_ += range_ & (0 - static_cast<uint32_t>((value >> i) & 1));
      while (range_ < range_coder_internal::kTopValue) {
        range_ <<= 8;
        ShiftLow();
      }
    }
  }

  // Encodes the low `nbits` of `value` high first with a binary tree of
  // adaptive probabilities: probs[1 .. 2^nbits - 1] are used.
  void EncodeTree(Prob* probs, int nbits, uint32_t value) {
    uint32_t m = 1;
    for (int i = nbits - 1; i >= 0; --i) {
      unsigned bit = (value >> i) & 1;
      EncodeBit(&probs[m], bit);
      m = (m << 1) | bit;
    }
  }

  // Writes the final bytes. Call once.
  void Finish();

 private:
  // Bytes leave through a one-byte cache plus a count of pending 0xFF bytes,
  // so that a carry out of `low_` can still be added to bytes not yet written.
  void ShiftLow() {
    if (static_cast<uint32_t>(low_) < 0xFF000000u || (low_ >> 32) != 0) {
      FlushCache();
    }
    ++cache_size_;
    low_ = (low_ & 0x00FFFFFFu) << 8;
  }
  void FlushCache();

  std::string* out_;
  uint64_t low_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  uint8_t cache_ = 0;
  uint64_t cache_size_ = 1;
  bool first_ = true;  // the first byte LZMA emits is always 0: not stored
};

class RangeDecoder {
 public:
  explicit RangeDecoder(std::string_view in) : in_(in) {
    for (int i = 0; i < 4; ++i) code_ = (code_ << 8) | NextByte();
  }

  unsigned DecodeBit(Prob* prob) {
    uint32_t bound = (range_ >> kProbBits) * prob->p;
    unsigned bit;
    if (code_ < bound) {
      range_ = bound;
      bit = 0;
    } else {
      code_ -= bound;
      range_ -= bound;
      bit = 1;
    }
    range_coder_internal::Update(prob, bit);
    Normalize();
    return bit;
  }

  uint64_t DecodeDirect(int nbits) {
    uint64_t value = 0;
    for (int i = 0; i < nbits; ++i) {
      range_ >>= 1;
      unsigned bit = code_ >= range_;
      code_ -= range_ & (0 - bit);
      value = (value << 1) | bit;
      Normalize();
    }
    return value;
  }

  uint32_t DecodeTree(Prob* probs, int nbits) {
    uint32_t m = 1;
    for (int i = 0; i < nbits; ++i) m = (m << 1) | DecodeBit(&probs[m]);
    return m - (1u << nbits);
  }

  // False once the decoder needed bytes beyond its span.
  bool ok() const { return !overrun_; }
  // True when every byte of the span was used, as for a well-formed stream.
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  void Normalize() {
    while (range_ < range_coder_internal::kTopValue) {
      range_ <<= 8;
      code_ = (code_ << 8) | NextByte();
    }
  }

  uint8_t NextByte() {
    if (pos_ < in_.size()) return static_cast<uint8_t>(in_[pos_++]);
    overrun_ = true;
    return 0;
  }

  std::string_view in_;
  size_t pos_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  uint32_t code_ = 0;
  bool overrun_ = false;
};

}  // namespace gpulse::storage
