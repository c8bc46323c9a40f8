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
// EstimateBits predicts the size of a sequence under this model without
// coding it, so the integer codec can rank its candidates and range-code
// only the best.
//
// Encoder and decoder must see the same sequence of calls on models in the
// same state. Thread safety: none; one model per coder. EstimateBits is a
// pure function.
#pragma once

#include <cstdint>
#include <span>

#include "storage/range_coder.h"

namespace gpulse::storage {

class AdaptiveIntModel {
 public:
  AdaptiveIntModel();

  void Encode(uint64_t value, RangeEncoder* enc) {
    int length = BitWidth(value);
    enc->EncodeTree(tables_.length[context_], kLengthBits, static_cast<uint32_t>(length));
    if (length >= 2) {
      int below = length - 1;  // bits under the leading one
      int modeled = below < kMantissaBits ? below : kMantissaBits;
      int raw = below - modeled;
      enc->EncodeTree(tables_.mantissa[length], modeled,
                      static_cast<uint32_t>(value >> raw) & ((1u << modeled) - 1));
      if (raw > 0) enc->EncodeDirect(value, raw);
    }
    Advance(length);
  }

  // False when the stream names a bit length above 64 (corrupt input).
  bool Decode(RangeDecoder* dec, uint64_t* value) {
    int length = static_cast<int>(dec->DecodeTree(tables_.length[context_], kLengthBits));
    if (length > 64) return false;
    uint64_t v = length == 0 ? 0 : 1;
    if (length >= 2) {
      int below = length - 1;
      int modeled = below < kMantissaBits ? below : kMantissaBits;
      int raw = below - modeled;
      v = (v << modeled) | dec->DecodeTree(tables_.mantissa[length], modeled);
      if (raw > 0) v = (v << raw) | dec->DecodeDirect(raw);
    }
    Advance(length);
    *value = v;
    return true;
  }

  // About the bits a fresh model spends on `values`: the empirical entropy of
  // the coded symbols (bit length given the context, modeled mantissa bits
  // given the bit length) plus the direct bits plus a learning cost per
  // symbol seen. Within a few percent of the real size on telemetry, at a
  // fraction of the cost of coding.
  static double EstimateBits(std::span<const uint64_t> values);

  // Bits that an adaptive coder needs for a sequence with the symbol
  // histogram `counts`, estimated as above.
  static double HistogramBits(const uint32_t* counts, int size);

 private:
  static constexpr int kContexts = 24;
  static constexpr int kLengthBits = 7;  // bit lengths 0..64
  static constexpr int kMantissaBits = 6;

  // All probabilities, in one block so that a new model is one memcpy from
  // the initial state (building ~7,000 Probs one by one showed in profiles).
  struct Tables {
    Prob length[kContexts][1 << kLengthBits];
    Prob mantissa[65][1 << kMantissaBits];
  };

  static int BitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }
  void Advance(int length) { context_ = length < kContexts ? length : kContexts - 1; }

  int context_ = 0;
  Tables tables_;
};

}  // namespace gpulse::storage
