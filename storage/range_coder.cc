#include "storage/range_coder.h"

namespace gpulse::storage {

namespace {
constexpr uint32_t kTopValue = 1u << 24;
constexpr uint32_t kProbTotal = 1u << kProbBits;

// kRate[n] = 2^16 / (n + 2): the update step after n observations.
struct RateTable {
  uint32_t rate[kProbWindow + 1];
  constexpr RateTable() : rate() {
    for (int n = 0; n <= kProbWindow; ++n) rate[n] = 65536u / static_cast<uint32_t>(n + 2);
  }
};
constexpr RateTable kRates;

// p stays within [1, kProbTotal - 1]: a step never reaches either end.
inline void Update(Prob* prob, unsigned bit) {
  uint32_t rate = kRates.rate[prob->n];
  if (bit == 0) {
    prob->p = static_cast<uint16_t>(prob->p + (((kProbTotal - prob->p) * rate) >> 16));
  } else {
    prob->p = static_cast<uint16_t>(prob->p - ((prob->p * rate) >> 16));
  }
  if (prob->n < kProbWindow) ++prob->n;
}
}  // namespace

void RangeEncoder::EncodeBit(Prob* prob, unsigned bit) {
  uint32_t bound = (range_ >> kProbBits) * prob->p;
  if (bit == 0) {
    range_ = bound;
  } else {
    low_ += bound;
    range_ -= bound;
  }
  Update(prob, bit);
  while (range_ < kTopValue) {
    range_ <<= 8;
    ShiftLow();
  }
}

void RangeEncoder::EncodeDirect(uint64_t value, int nbits) {
  for (int i = nbits - 1; i >= 0; --i) {
    range_ >>= 1;
    if ((value >> i) & 1) low_ += range_;
    while (range_ < kTopValue) {
      range_ <<= 8;
      ShiftLow();
    }
  }
}

void RangeEncoder::EncodeTree(Prob* probs, int nbits, uint32_t value) {
  uint32_t m = 1;
  for (int i = nbits - 1; i >= 0; --i) {
    unsigned bit = (value >> i) & 1;
    EncodeBit(&probs[m], bit);
    m = (m << 1) | bit;
  }
}

void RangeEncoder::Finish() {
  for (int i = 0; i < 5; ++i) ShiftLow();
}

// Bytes leave through a one-byte cache plus a count of pending 0xFF bytes, so
// that a carry out of `low_` can still be added to bytes not yet written.
void RangeEncoder::ShiftLow() {
  if (static_cast<uint32_t>(low_) < 0xFF000000u || (low_ >> 32) != 0) {
    uint8_t carry = static_cast<uint8_t>(low_ >> 32);
    uint8_t temp = cache_;
    do {
      if (!first_) out_->push_back(static_cast<char>(static_cast<uint8_t>(temp + carry)));
      first_ = false;
      temp = 0xFF;
    } while (--cache_size_ != 0);
    cache_ = static_cast<uint8_t>(low_ >> 24);
  }
  ++cache_size_;
  low_ = (low_ & 0x00FFFFFFu) << 8;
}

RangeDecoder::RangeDecoder(std::string_view in) : in_(in) {
  for (int i = 0; i < 4; ++i) code_ = (code_ << 8) | NextByte();
}

uint8_t RangeDecoder::NextByte() {
  if (pos_ < in_.size()) return static_cast<uint8_t>(in_[pos_++]);
  overrun_ = true;
  return 0;
}

unsigned RangeDecoder::DecodeBit(Prob* prob) {
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
  Update(prob, bit);
  while (range_ < kTopValue) {
    range_ <<= 8;
    code_ = (code_ << 8) | NextByte();
  }
  return bit;
}

uint64_t RangeDecoder::DecodeDirect(int nbits) {
  uint64_t value = 0;
  for (int i = 0; i < nbits; ++i) {
    range_ >>= 1;
    unsigned bit = 0;
    if (code_ >= range_) {
      code_ -= range_;
      bit = 1;
    }
    value = (value << 1) | bit;
    while (range_ < kTopValue) {
      range_ <<= 8;
      code_ = (code_ << 8) | NextByte();
    }
  }
  return value;
}

uint32_t RangeDecoder::DecodeTree(Prob* probs, int nbits) {
  uint32_t m = 1;
  for (int i = 0; i < nbits; ++i) m = (m << 1) | DecodeBit(&probs[m]);
  return m - (1u << nbits);
}

}  // namespace gpulse::storage
