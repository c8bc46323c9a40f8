#include "storage/range_coder.h"

namespace gpulse::storage {

void RangeEncoder::Finish() {
  for (int i = 0; i < 5; ++i) ShiftLow();
}

void RangeEncoder::FlushCache() {
  uint8_t carry = static_cast<uint8_t>(low_ >> 32);
  uint8_t temp = cache_;
  do {
    if (!first_) out_->push_back(static_cast<char>(static_cast<uint8_t>(temp + carry)));
    first_ = false;
    temp = 0xFF;
  } while (--cache_size_ != 0);
  cache_ = static_cast<uint8_t>(low_ >> 24);
}

}  // namespace gpulse::storage
