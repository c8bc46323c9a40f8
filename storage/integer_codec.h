// Integer codec: encodes a sequence of 64-bit integers (int64 or uint64, held
// as two's-complement bits) for the chunk format; also the back end of the
// timestamp codec and of the decimal float form.
//
// The values are first turned into residuals of order 0 (the values), 1
// (deltas) or 2 (delta-of-delta), computed with wrap-around unsigned
// arithmetic so int64 min/max and uint64 max never overflow. The first
// `order` residuals are stored as zigzag varints; the rest are mapped to
// unsigned (order 0: offsets from the minimum, stored once; orders 1 and 2:
// zigzag, so small negative residuals stay small) and packed by one
// of four methods: constant (one varint), frame-of-reference bit packing in
// blocks of 128, adaptive range coding (storage/adaptive_int_model.h), or a
// dictionary of repeated residuals (for counters whose increments repeat).
// The encoder ranks the candidates by estimated size (exact for the cheap
// ones) and range-codes only the best one or two; the choice is one
// method byte, (order << 4) | method, which the caller stores (the chunk
// header). The byte layout is in docs/format/chunks.md.
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

// Appends the encoding of `values` to `*out` and returns its method byte.
uint8_t EncodeIntegers(std::span<const uint64_t> values, std::string* out);

// Decodes `count` values written by EncodeIntegers with `method`, appending
// them to `*out`. Returns Corruption on malformed input.
Status DecodeIntegers(uint8_t method, uint32_t count, ByteReader* in, std::vector<uint64_t>* out);

// A readable name for a method byte ("delta/adaptive"), for benchmarks and
// debugging output.
std::string IntegerMethodName(uint8_t method);

}  // namespace gpulse::storage
