#include "storage/timestamp_codec.h"

#include "storage/integer_codec.h"
#include "storage/time_unit.h"

namespace gpulse::storage {

uint8_t EncodeTimestamps(std::span<const int64_t> ts, int64_t base, size_t unit, std::string* out) {
  const ExactTimeDivisor& by = kTimeDivisors[unit];
  std::vector<uint64_t> offsets(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    offsets[i] = by.Divide(static_cast<uint64_t>(ts[i]) - static_cast<uint64_t>(base));
  }
  return EncodeIntegers(offsets, out);
}

Status DecodeTimestamps(uint8_t method, uint32_t count, int64_t base, int64_t unit, ByteReader* in,
                        std::vector<int64_t>* ts) {
  std::vector<uint64_t> offsets;
  GPULSE_RETURN_IF_ERROR(DecodeIntegers(method, count, in, &offsets).WithContext("timestamps"));
  ts->resize(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    (*ts)[i] = static_cast<int64_t>(offsets[i] * static_cast<uint64_t>(unit) +
                                    static_cast<uint64_t>(base));
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
