#include "storage/chunk_codec.h"

#include <algorithm>
#include <cassert>
#include <memory>

#include "storage/bool_codec.h"
#include "storage/byte_reader.h"
#include "storage/coding.h"
#include "storage/float_codec.h"
#include "storage/integer_codec.h"
#include "storage/string_codec.h"
#include "storage/time_unit.h"
#include "storage/timestamp_codec.h"
#include "storage/zstd_frame.h"

namespace gpulse::storage {

namespace {

// 2 writes times relative to the chunk's window and in a unit; 1 (written
// before session 39) wrote min_ts whole and nanoseconds, and is still read.
constexpr uint8_t kFormatVersion = 2;
constexpr uint8_t kFormatVersion1 = 1;
constexpr uint8_t kFlagZstd = 0x01;
constexpr int kZstdLevel = 3;
// Below this a zstd frame (at least 9 bytes of framing) cannot win.
constexpr size_t kMinZstdBody = 32;
// The encoder only keeps a zstd body whose raw size is within this ratio of
// its compressed size, so the decoder can refuse larger claimed sizes before
// it allocates anything.
constexpr uint64_t kMaxZstdRatio = 1024;

struct Header {
  FieldType type = FieldType::kFloat;
  uint8_t flags = 0;
  uint8_t ts_method = 0;
  uint8_t value_method = 0;
  uint32_t count = 0;
  int64_t min_ts = 0;
  int64_t max_ts = 0;
  int64_t unit = 1;  // ns a timestamp offset counts
};

// The index in kTimeUnits of the largest unit dividing every ts[i] - min_ts
// (as unsigned: offsets past 2^63 divide as they are stored).
size_t TimeUnitOf(const std::vector<int64_t>& ts, int64_t min_ts) {
  size_t unit = kTimeUnitCount - 1;
  for (const int64_t t : ts) {
    const uint64_t off = static_cast<uint64_t>(t) - static_cast<uint64_t>(min_ts);
    while (unit > 0 && !kTimeDivisors[unit].Divides(off)) --unit;
    if (unit == 0) break;
  }
  return unit;
}

uint8_t EncodeValues(const Column& column, std::string* out) {
  size_t n = column.ts.size();
  switch (column.type) {
    case FieldType::kFloat:
      assert(column.floats.size() == n);
      return static_cast<uint8_t>(EncodeFloats({column.floats.data(), n}, out));
    case FieldType::kInt:
      assert(column.ints.size() == n);
      // Same bits, read as unsigned so deltas wrap instead of overflowing.
      return EncodeIntegers({reinterpret_cast<const uint64_t*>(column.ints.data()), n}, out);
    case FieldType::kUint:
      assert(column.uints.size() == n);
      return EncodeIntegers({column.uints.data(), n}, out);
    case FieldType::kBool:
      assert(column.bools.size() == n);
      EncodeBools({column.bools.data(), n}, out);
      return 0;
    case FieldType::kString:
      assert(column.strings.size() == n);
      EncodeStrings({column.strings.data(), n}, out);
      return 0;
  }
  return 0;
}

Status DecodeValues(const Header& h, ByteReader* in, Column* column) {
  switch (h.type) {
    case FieldType::kFloat:
      return DecodeFloats(h.value_method, h.count, in, &column->floats);
    case FieldType::kInt:
    case FieldType::kUint: {
      std::vector<uint64_t> bits;
      GPULSE_RETURN_IF_ERROR(DecodeIntegers(h.value_method, h.count, in, &bits));
      if (h.type == FieldType::kUint) {
        column->uints = std::move(bits);
      } else {
        column->ints.assign(bits.begin(), bits.end());  // modular conversion, C++20
      }
      return Status::Ok();
    }
    case FieldType::kBool:
      return DecodeBools(h.count, in, &column->bools);
    case FieldType::kString:
      return DecodeStrings(h.count, in, &column->strings);
  }
  return Status::Corruption("unknown field type");
}

// Compresses `body` in place when zstd makes it smaller.
bool MaybeCompress(std::string* body) {
  if (body->size() < kMinZstdBody) return false;
  return ZstdCompressIfSmaller(body, kZstdLevel, kMaxZstdRatio);
}

Status Decompress(std::string_view frame, std::string* body) {
  return ZstdDecompress(frame, kMaxZstdRatio * frame.size(), body);
}

Status ReadHeader(ByteReader* in, int64_t base, Header* h) {
  uint8_t version, type;
  uint64_t count;
  if (!in->ReadByte(&version) || !in->ReadByte(&type) || !in->ReadByte(&h->flags) ||
      !in->ReadByte(&h->ts_method) || !in->ReadByte(&h->value_method) ||
      !in->ReadVarint64(&count)) {
    return Status::Corruption("chunk header truncated");
  }
  if (version != kFormatVersion && version != kFormatVersion1) {
    return Status::Corruption("unknown chunk format version " + std::to_string(version));
  }
  if (!IsValidFieldType(type)) return Status::Corruption("bad field type " + std::to_string(type));
  if ((h->flags & ~kFlagZstd) != 0) return Status::Corruption("unknown chunk flags");
  if (count > kMaxChunkPoints) return Status::Corruption("point count above kMaxChunkPoints");
  h->type = static_cast<FieldType>(type);
  h->count = static_cast<uint32_t>(count);
  if (h->count == 0) return Status::Ok();
  uint64_t min_ts, span;
  if (version == kFormatVersion1) {
    if (!in->ReadFixed64(&min_ts) || !in->ReadVarint64(&span)) {
      return Status::Corruption("chunk header truncated");
    }
  } else {
    uint8_t unit;
    uint64_t offset, units;
    if (!in->ReadByte(&unit) || !in->ReadVarint64(&offset) || !in->ReadVarint64(&units)) {
      return Status::Corruption("chunk header truncated");
    }
    if (unit >= kTimeUnitCount) return Status::Corruption("bad time unit " + std::to_string(unit));
    h->unit = kTimeUnits[unit];
    if (units > UINT64_MAX / static_cast<uint64_t>(h->unit)) {
      return Status::Corruption("time span out of range");
    }
    min_ts = static_cast<uint64_t>(base) + ZigZagDecode(offset);
    span = units * static_cast<uint64_t>(h->unit);
  }
  h->min_ts = static_cast<int64_t>(min_ts);
  h->max_ts = static_cast<int64_t>(min_ts + span);
  if (h->max_ts < h->min_ts) return Status::Corruption("max timestamp below min timestamp");
  return Status::Ok();
}

}  // namespace

void EncodeChunk(const Column& column, int64_t base, std::string* out) {
  size_t n = column.ts.size();
  assert(n <= kMaxChunkPoints);
  int64_t min_ts = 0, max_ts = 0;
  if (n > 0) {
    auto [lo, hi] = std::minmax_element(column.ts.begin(), column.ts.end());
    min_ts = *lo;
    max_ts = *hi;
  }
  const size_t unit = n > 0 ? TimeUnitOf(column.ts, min_ts) : 0;
  std::string body;
  uint8_t ts_method = EncodeTimestamps(column.ts, min_ts, unit, &body);
  uint8_t value_method = EncodeValues(column, &body);
  uint8_t flags = MaybeCompress(&body) ? kFlagZstd : 0;

  out->push_back(static_cast<char>(kFormatVersion));
  out->push_back(static_cast<char>(column.type));
  out->push_back(static_cast<char>(flags));
  out->push_back(static_cast<char>(ts_method));
  out->push_back(static_cast<char>(value_method));
  PutVarint64(out, n);
  if (n > 0) {
    out->push_back(static_cast<char>(unit));
    PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(min_ts) - static_cast<uint64_t>(base)));
    PutVarint64(out, kTimeDivisors[unit].Divide(static_cast<uint64_t>(max_ts) -
                                                static_cast<uint64_t>(min_ts)));
  }
  out->append(body);
}

Status ReadChunkInfo(std::string_view data, int64_t base, ChunkInfo* info) {
  ByteReader in(data);
  Header h;
  GPULSE_RETURN_IF_ERROR(ReadHeader(&in, base, &h));
  info->type = h.type;
  info->count = h.count;
  info->min_ts = h.min_ts;
  info->max_ts = h.max_ts;
  return Status::Ok();
}

Status DecodeChunk(std::string_view data, int64_t base, Column* column) {
  ByteReader in(data);
  Header h;
  GPULSE_RETURN_IF_ERROR(ReadHeader(&in, base, &h));
  std::string inflated;
  std::string_view body = data.substr(in.position());
  if (h.flags & kFlagZstd) {
    GPULSE_RETURN_IF_ERROR(Decompress(body, &inflated));
    body = inflated;
  }
  column->Clear();
  column->type = h.type;
  ByteReader reader(body);
  GPULSE_RETURN_IF_ERROR(
      DecodeTimestamps(h.ts_method, h.count, h.min_ts, h.unit, &reader, &column->ts));
  GPULSE_RETURN_IF_ERROR(DecodeValues(h, &reader, column));
  if (reader.remaining() != 0) return Status::Corruption("trailing bytes after the values");
  if (h.count > 0) {
    auto [lo, hi] = std::minmax_element(column->ts.begin(), column->ts.end());
    if (*lo != h.min_ts || *hi != h.max_ts) {
      return Status::Corruption("timestamps disagree with the header's range");
    }
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
