#include "storage/adaptive_int_model.h"

#include <bit>

namespace gpulse::storage {

AdaptiveIntModel::AdaptiveIntModel() {}

void AdaptiveIntModel::Encode(uint64_t value, RangeEncoder* enc) {
  int length = std::bit_width(value);
  enc->EncodeTree(length_[context_], kLengthBits, static_cast<uint32_t>(length));
  if (length >= 2) {
    int below = length - 1;  // bits under the leading one
    int modeled = below < kMantissaBits ? below : kMantissaBits;
    int raw = below - modeled;
    enc->EncodeTree(mantissa_[length], modeled,
                    static_cast<uint32_t>(value >> raw) & ((1u << modeled) - 1));
    if (raw > 0) enc->EncodeDirect(value, raw);
  }
  Advance(length);
}

bool AdaptiveIntModel::Decode(RangeDecoder* dec, uint64_t* value) {
  int length = static_cast<int>(dec->DecodeTree(length_[context_], kLengthBits));
  if (length > 64) return false;
  uint64_t v = length == 0 ? 0 : 1;
  if (length >= 2) {
    int below = length - 1;
    int modeled = below < kMantissaBits ? below : kMantissaBits;
    int raw = below - modeled;
    v = (v << modeled) | dec->DecodeTree(mantissa_[length], modeled);
    if (raw > 0) v = (v << raw) | dec->DecodeDirect(raw);
  }
  Advance(length);
  *value = v;
  return true;
}

}  // namespace gpulse::storage
