#include "storage/byte_reader.h"

namespace gpulse::storage {

bool ByteReader::ReadByte(uint8_t* value) {
  if (pos_ >= data_.size()) return false;
  *value = static_cast<uint8_t>(data_[pos_++]);
  return true;
}

bool ByteReader::ReadFixed64(uint64_t* value) {
  if (remaining() < 8) return false;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(data_[pos_ + i])} << (8 * i);
  pos_ += 8;
  *value = v;
  return true;
}

bool ByteReader::ReadVarint64(uint64_t* value) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10 && pos_ + i < data_.size(); ++i) {
    uint64_t byte = static_cast<uint8_t>(data_[pos_ + i]);
    // The tenth byte may only carry the 64th bit.
    if (i == 9 && byte > 1) return false;
    v |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      pos_ += i + 1;
      *value = v;
      return true;
    }
  }
  return false;
}

bool ByteReader::ReadBytes(uint64_t n, std::string_view* bytes) {
  if (n > remaining()) return false;
  *bytes = data_.substr(pos_, n);
  pos_ += n;
  return true;
}

}  // namespace gpulse::storage
