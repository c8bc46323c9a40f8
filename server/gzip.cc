#include "server/gzip.h"

#include <zlib.h>

#include <memory>

namespace gpulse::server {

Status Gunzip(std::string_view compressed, uint64_t limit, std::string* out) {
  out->clear();
  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (and check the CRC).
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return Status::ResourceExhausted("gzip: cannot allocate the inflater");
  }
  const std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, inflateEnd);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  char buffer[64 << 10];
  for (;;) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    const int rc = inflate(&stream, Z_NO_FLUSH);
    const size_t produced = sizeof(buffer) - stream.avail_out;
    if (out->size() + produced > limit) {
      return Status::ResourceExhausted("gzip body inflates past the limit of " +
                                       std::to_string(limit) + " bytes");
    }
    out->append(buffer, produced);
    if (rc == Z_STREAM_END) {
      // A gzip file may hold several members; agents send one.
      if (stream.avail_in == 0) return Status::Ok();
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) {
      return Status::InvalidArgument("gzip body is truncated");
    }
    const char* why = stream.msg ? stream.msg : "not gzip data";
    return Status::InvalidArgument(std::string("gzip body is invalid: ") + why);
  }
  return Status::InvalidArgument("gzip body is invalid");
}

}  // namespace gpulse::server
