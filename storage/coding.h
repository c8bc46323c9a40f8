// Coding: the small byte-level helpers every on-disk format of gpulse shares:
// little-endian fixed-width integers, LEB128 varints and zigzag mapping.
// Writers append to a std::string; reading goes through ByteReader
// (storage/byte_reader.h), which checks every bound.
//
// Thread safety: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace gpulse::storage {

void PutFixed64(std::string* dst, uint64_t value);
// 1 to 10 bytes, 7 bits a byte, low group first, high bit = "more follows".
void PutVarint64(std::string* dst, uint64_t value);
// The bytes PutVarint64 writes for `value`.
inline size_t VarintLength(uint64_t value) {
  size_t n = 1;
  for (; value >= 128; value >>= 7) ++n;
  return n;
}

// Maps a two's-complement value (held in uint64 so that deltas can be formed
// with wrap-around arithmetic, never signed overflow) to an unsigned one whose
// magnitude grows with |value|: 0,-1,1,-2 -> 0,1,2,3.
inline uint64_t ZigZagEncode(uint64_t value) { return (value << 1) ^ (0 - (value >> 63)); }
inline uint64_t ZigZagDecode(uint64_t zz) { return (zz >> 1) ^ (0 - (zz & 1)); }

}  // namespace gpulse::storage
