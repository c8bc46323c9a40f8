#include "storage/bit_stream.h"

namespace gpulse::storage {

void BitWriter::Write(uint64_t value, int nbits) {
  if (nbits < 64) value &= (uint64_t{1} << nbits) - 1;
  // Emit in pieces of at most 32 bits so the accumulator (< 8 pending bits)
  // never overflows.
  while (nbits > 0) {
    int take = nbits > 32 ? 32 : nbits;
    acc_ |= (value & ((uint64_t{1} << take) - 1)) << nacc_;
    nacc_ += take;
    value = take == 64 ? 0 : value >> take;
    nbits -= take;
    while (nacc_ >= 8) {
      out_->push_back(static_cast<char>(acc_));
      acc_ >>= 8;
      nacc_ -= 8;
    }
  }
}

void BitWriter::Finish() {
  if (nacc_ > 0) out_->push_back(static_cast<char>(acc_));
  acc_ = 0;
  nacc_ = 0;
}

bool BitReader::Read(int nbits, uint64_t* value) {
  if (nbits < 0 || nbits > 64) return false;
  if (bitpos_ + nbits > uint64_t{data_.size()} * 8) return false;
  uint64_t v = 0;
  int got = 0;
  while (got < nbits) {
    uint64_t byte = static_cast<uint8_t>(data_[bitpos_ / 8]);
    int offset = static_cast<int>(bitpos_ % 8);
    int take = 8 - offset;
    if (take > nbits - got) take = nbits - got;
    uint64_t bits = (byte >> offset) & ((1u << take) - 1);
    v |= bits << got;
    got += take;
    bitpos_ += take;
  }
  *value = v;
  return true;
}

}  // namespace gpulse::storage
