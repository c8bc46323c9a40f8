// Timestamp codec: encodes a chunk's timestamps (int64 nanoseconds, in the
// order given: duplicates and decreasing values are kept) as offsets from the
// chunk's minimum timestamp, through the integer codec. A regular grid has a
// constant delta, so its delta-of-delta tail is the constant 0 and the whole
// column costs a few bytes whatever its length.
//
// Thread safety: free functions without shared state; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "storage/byte_reader.h"
#include "storage/status.h"

namespace gpulse::storage {

// Appends the encoding of `ts` as offsets from `base` in units of
// kTimeUnits[unit] (storage/time_unit.h; it must divide every offset) and
// returns its method byte (an integer codec method).
uint8_t EncodeTimestamps(std::span<const int64_t> ts, int64_t base, size_t unit, std::string* out);

// Decodes `count` timestamps into `*ts` (replacing its contents): base plus
// each offset times `unit`, modulo 2^64 (a caller checks the range).
Status DecodeTimestamps(uint8_t method, uint32_t count, int64_t base, int64_t unit, ByteReader* in,
                        std::vector<int64_t>* ts);

}  // namespace gpulse::storage
