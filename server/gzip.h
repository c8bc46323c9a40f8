// Gunzip: inflates a gzip request body (Content-Encoding: gzip) with zlib,
// stopping as soon as the output would pass a limit, so a small body that
// inflates to gigabytes costs at most `limit` bytes of memory.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace gpulse::server {

// Inflates `compressed` into *out. Returns ResourceExhausted when the output
// would exceed `limit` bytes, InvalidArgument when the body is not valid gzip.
Status Gunzip(std::string_view compressed, uint64_t limit, std::string* out);

}  // namespace gpulse::server
