// Timestamp codec: encodes a chunk's timestamps (int64 nanoseconds, in the
// order given: duplicates and decreasing values are kept) as offsets from the
// chunk's minimum timestamp, through the integer codec. A regular grid has a
// constant delta, so its delta-of-delta tail is the constant 0 and the whole
// column costs a few bytes whatever its length.
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

// Appends the encoding of `ts` relative to `base` and returns its method byte
// (an integer codec method).
uint8_t EncodeTimestamps(std::span<const int64_t> ts, int64_t base, std::string* out);

// Decodes `count` timestamps into `*ts` (replacing its contents).
Status DecodeTimestamps(uint8_t method, uint32_t count, int64_t base, ByteReader* in,
                        std::vector<int64_t>* ts);

}  // namespace gpulse::storage
