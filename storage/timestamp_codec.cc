#include "storage/timestamp_codec.h"

#include "storage/integer_codec.h"

namespace gpulse::storage {

uint8_t EncodeTimestamps(std::span<const int64_t> ts, int64_t base, std::string* out) {
  std::vector<uint64_t> offsets(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    offsets[i] = static_cast<uint64_t>(ts[i]) - static_cast<uint64_t>(base);
  }
  return EncodeIntegers(offsets, out);
}

Status DecodeTimestamps(uint8_t method, uint32_t count, int64_t base, ByteReader* in,
                        std::vector<int64_t>* ts) {
  std::vector<uint64_t> offsets;
  GPULSE_RETURN_IF_ERROR(DecodeIntegers(method, count, in, &offsets).WithContext("timestamps"));
  ts->resize(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    (*ts)[i] = static_cast<int64_t>(offsets[i] + static_cast<uint64_t>(base));
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
