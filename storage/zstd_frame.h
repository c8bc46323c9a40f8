// zstd frames for the on-disk formats (chunks, rollup blocks): compress when
// it pays, decompress with bounds, one compression and one decompression
// context per thread.
//
// Thread safety: free functions; the contexts are thread_local.
#pragma once

#include <cstddef>
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

}  // namespace gpulse::storage
