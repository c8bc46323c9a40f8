// zstd frames for the on-disk formats (chunks, rollup blocks): compress when
// it pays, decompress with bounds, one compression and one decompression
// context per thread.
//
// Thread safety: free functions; the contexts are thread_local.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace gpulse::storage {

class ZstdDictionary;

// Replaces *body with one zstd frame of it (at `level`) when the frame is
// smaller and the body at most `max_ratio` times the frame; false (and *body
// untouched) otherwise.
bool ZstdCompressIfSmaller(std::string* body, int level, size_t max_ratio);

// Decodes `frame`, which must be exactly one zstd frame whose content size is
// in its header and at most `max_bytes`, into *body. Corruption naming what
// is wrong otherwise.
Status ZstdDecompress(std::string_view frame, size_t max_bytes, std::string* body);

// Tier blocks (rollups, tallies) are framed alike: a format byte, a
// compression byte (0: the body as is; 1: one zstd frame of it; 2: one zstd
// frame of it less the frame's 4-byte magic number, which is the same in
// every frame; 3: as 2, compressed with the dictionary of the block's tier
// and field), the body.
//
// Appends the block of `body`: with `dict` (as 3) when one is given, at its
// level, otherwise at `level` (as 2), when that is smaller than the body.
void AppendBlock(uint8_t format, std::string body, int level, const ZstdDictionary* dict,
                 std::string* out);
// The most a block's body may hold once decompressed (docs/format/rollups.md):
// 288 rows of full sketches, or of 8 string values, are far below it.
inline constexpr size_t kMaxBlockBodyBytes = 64 << 20;
// Appends `block` framed again with `dict` (not null): the same format byte
// and body, compressed with it as AppendBlock does. `was` is the dictionary `block`
// may need to be opened. For a compaction that gives a field's blocks its
// dictionary: their bodies stay as they are, and are not decoded. The
// frame's fault (OpenBlock's) when the block cannot be opened.
Status ReframeBlock(std::string_view block, const ZstdDictionary* was, const ZstdDictionary* dict,
                    std::string* out);
// Whether `data` is a block compressed with a dictionary (compression 3).
inline bool IsDictionaryCompressedBlock(std::string_view data) {
  return data.size() >= 2 && data[1] == '\3';
}
// The body of a block that must have `format`: *body views `data`, or
// *scratch when it was compressed. `dict` is the dictionary of the block's
// tier and field, or null when the store has none. Corruption ("truncated
// header", "unknown format N", "unknown compression N", "compressed with a
// dictionary the store lacks", or the frame's fault) otherwise.
Status OpenBlock(std::string_view data, uint8_t format, size_t max_bytes,
                 const ZstdDictionary* dict, std::string* scratch, std::string_view* body);

}  // namespace gpulse::storage
