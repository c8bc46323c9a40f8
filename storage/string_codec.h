// String codec: a dictionary of the distinct strings in first-appearance
// order, then runs of (dictionary id, length). String fields in telemetry are
// mostly labels (job state, model name) that repeat for long stretches, so
// both parts stay short, and the chunk's zstd pass handles the text itself.
// Strings are opaque bytes: NUL and any UTF-8 round-trip unchanged.
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

// Decoding refuses chunks whose strings would add up to more than this, so a
// crafted run length cannot make the decoder allocate without bound. The
// engine keeps chunks far below it.
inline constexpr uint64_t kMaxChunkStringBytes = uint64_t{256} << 20;

void EncodeStrings(std::span<const std::string> values, std::string* out);
Status DecodeStrings(uint32_t count, ByteReader* in, std::vector<std::string>* values);

}  // namespace gpulse::storage
