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
// every frame), the body. Appends the block of `body`, compressed at `level`
// (as 2) when that is smaller.
void AppendBlock(uint8_t format, std::string body, int level, std::string* out);
// The body of a block that must have `format`: *body views `data`, or
// *scratch when it was compressed. Corruption ("truncated header", "unknown
// format N", "unknown compression N", or the frame's fault) otherwise.
Status OpenBlock(std::string_view data, uint8_t format, size_t max_bytes, std::string* scratch,
                 std::string_view* body);

}  // namespace gpulse::storage
