// Bool codec: one bit per value, LSB first, zero padded to a byte. Runs of
// equal values are left to the chunk's zstd pass, which removes them well.
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

// Any non-zero input byte is stored as true.
void EncodeBools(std::span<const uint8_t> values, std::string* out);
Status DecodeBools(uint32_t count, ByteReader* in, std::vector<uint8_t>* values);

}  // namespace gpulse::storage
