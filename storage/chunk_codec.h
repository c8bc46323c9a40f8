// Chunk codec: encodes one Column (timestamps + values of one field of one
// series) into a self-describing byte string, and decodes it back.
//
// Timestamps use delta-of-delta; floats Gorilla XOR (or a decimal form where
// it is smaller); integers zigzag delta with bit packing; bools bit packing;
// strings a dictionary plus run lengths. The block is then zstd-compressed
// when that makes it smaller. The byte format is docs/format/chunks.md.
//
// Input order is kept as given: duplicate and decreasing timestamps round-trip
// exactly (the engine sorts and de-duplicates before it encodes; the codec
// does not rely on it). Every value round-trips bit for bit, NaN payloads,
// -0.0 and infinities included.
//
// Thread safety: free functions without shared state; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "storage/column.h"
#include "storage/status.h"

namespace gpulse::storage {

// Appends the encoding of `column` to `*out`. `column` must be consistent: the
// vector for its type has exactly ts.size() entries. An empty column encodes
// to a valid chunk of zero points. Its times are written relative to `base`,
// the start of the window whose key it is stored under: every reader of the
// chunk must give the same base (a chunk costs a byte for its first time,
// not eight).
void EncodeChunk(const Column& column, int64_t base, std::string* out);

// Decodes `data`, written with `base`, into `*column` (replacing its
// contents). Returns Corruption naming what is wrong when `data` is not a
// valid chunk: never reads out of bounds and never allocates more than the
// header's point count allows (itself bounded by kMaxChunkPoints).
Status DecodeChunk(std::string_view data, int64_t base, Column* column);

// Reads only the header: the point count, type and first/last timestamp, so a
// reader can skip a chunk without decoding it.
struct ChunkInfo {
  FieldType type = FieldType::kFloat;
  uint32_t count = 0;
  int64_t min_ts = 0;
  int64_t max_ts = 0;
};
Status ReadChunkInfo(std::string_view data, int64_t base, ChunkInfo* info);

// Upper bound on points in one chunk; decoding refuses larger counts.
inline constexpr uint32_t kMaxChunkPoints = 1u << 24;

}  // namespace gpulse::storage
