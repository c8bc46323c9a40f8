#include "storage/bool_codec.h"

namespace gpulse::storage {

void EncodeBools(std::span<const uint8_t> values, std::string* out) {
  uint8_t byte = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0) byte |= static_cast<uint8_t>(1u << (i % 8));
    if (i % 8 == 7) {
      out->push_back(static_cast<char>(byte));
      byte = 0;
    }
  }
  if (values.size() % 8 != 0) out->push_back(static_cast<char>(byte));
}

Status DecodeBools(uint32_t count, ByteReader* in, std::vector<uint8_t>* values) {
  std::string_view packed;
  if (!in->ReadBytes((uint64_t{count} + 7) / 8, &packed)) {
    return Status::Corruption("bools: truncated");
  }
  values->resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    (*values)[i] = (static_cast<uint8_t>(packed[i / 8]) >> (i % 8)) & 1;
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
