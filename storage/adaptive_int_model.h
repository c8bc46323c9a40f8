// AdaptiveIntModel: the probability model that range-codes a sequence of
// unsigned integers (zigzagged residuals) near their entropy.
//
// A value z is sent as its bit length n = bit_width(z) (0..64), then the bits
// below its leading one. n is coded with a 7-bit binary tree whose
// probabilities depend on the previous value's bit length, so a quiet stretch
// (idle GPU: residuals 0) and a noisy one (busy GPU) each get their own
// statistics. The top kMantissaBits bits below the leading one are coded
// with a tree per n (this captures the shape of small distributions
// exactly); any lower bits are close to uniform and sent as direct bits.
//
// Encoder and decoder must see the same sequence of calls on models in the
// same state. Thread safety: none; one model per coder.
#pragma once

#include <cstdint>

#include "storage/range_coder.h"

namespace gpulse::storage {

class AdaptiveIntModel {
 public:
  AdaptiveIntModel();

  void Encode(uint64_t value, RangeEncoder* enc);
  // False when the stream names a bit length above 64 (corrupt input).
  bool Decode(RangeDecoder* dec, uint64_t* value);

 private:
  static constexpr int kContexts = 24;
  static constexpr int kLengthBits = 7;  // bit lengths 0..64
  static constexpr int kMantissaBits = 6;

  void Advance(int length) { context_ = length < kContexts ? length : kContexts - 1; }

  int context_ = 0;
  Prob length_[kContexts][1 << kLengthBits];
  Prob mantissa_[65][1 << kMantissaBits];
};

}  // namespace gpulse::storage
