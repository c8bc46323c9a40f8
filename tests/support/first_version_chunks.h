// Chunks as gpulse wrote them before session 39 (chunk format version 1:
// min_ts as 8 fixed bytes, times in ns; docs/format/chunks.md), made from
// version-2 chunks of nanosecond times, whose bodies are the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/byte_reader.h"
#include "storage/coding.h"

namespace gpulse::test {

// The version-1 form of `v2`, a version-2 chunk written with `base` whose
// time unit is 1 ns; empty when it is not one.
inline std::string FirstVersionChunk(std::string_view v2, int64_t base) {
  storage::ByteReader in(v2);
  uint8_t header[5];
  for (uint8_t& b : header) {
    if (!in.ReadByte(&b)) return "";
  }
  uint64_t count = 0, offset = 0, span = 0;
  uint8_t unit = 0;
  if (header[0] != 2 || !in.ReadVarint64(&count)) return "";
  std::string v1(reinterpret_cast<const char*>(header), 5);
  v1[0] = 1;
  storage::PutVarint64(&v1, count);
  if (count > 0) {
    if (!in.ReadByte(&unit) || unit != 0 || !in.ReadVarint64(&offset) || !in.ReadVarint64(&span)) {
      return "";
    }
    storage::PutFixed64(&v1, static_cast<uint64_t>(base) + storage::ZigZagDecode(offset));
    storage::PutVarint64(&v1, span);
  }
  v1.append(v2.substr(in.position()));
  return v1;
}

}  // namespace gpulse::test
