// Gorilla codec: the XOR float compression of Facebook's Gorilla TSDB, the
// fallback form of the float codec (storage/float_codec.h) for values that
// are not short decimals. Bit layout in docs/format/chunks.md.
//
// Thread safety: free functions without shared state; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "storage/byte_reader.h"
#include "storage/status.h"

namespace gpulse::storage {

void EncodeGorilla(std::span<const double> values, std::string* out);
// The number of bytes EncodeGorilla would append, computed without writing
// them (a few times cheaper), so the float codec can choose its form first.
size_t GorillaEncodedSize(std::span<const double> values);
// Appends `count` values to `*values`; consumes exactly the bytes written.
Status DecodeGorilla(uint32_t count, ByteReader* in, std::vector<double>* values);

}  // namespace gpulse::storage
