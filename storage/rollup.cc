#include "storage/rollup.h"

#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>

#include "storage/byte_reader.h"
#include "storage/coding.h"
#include "storage/float_codec.h"
#include "storage/key_layout.h"
#include "storage/time_unit.h"
#include "storage/zstd_frame.h"

namespace gpulse::storage {

namespace {

// Format 1 wrote buckets and point offsets in nanoseconds and a sketch in
// every row; format 3 writes them in units and keeps sketches only where
// asked; format 4 writes each value column by the method that makes it
// smallest (docs/format/rollups.md). All are read; flushes write format 4.
constexpr uint8_t kRollupFormat1 = 1;
constexpr uint8_t kRollupFormat3 = 3;
constexpr uint8_t kRollupFormat = 4;
// Fast: a flush compresses every block it touches.
constexpr int kZstdLevel = 1;

// Calls fn(T{}) with the C++ type of a numeric field type.
template <typename Fn>
void WithType(FieldType type, Fn fn) {
  switch (type) {
    case FieldType::kInt:
      fn(int64_t{});
      break;
    case FieldType::kUint:
      fn(uint64_t{});
      break;
    default:
      fn(double{});
      break;
  }
}

// Integer sums wrap (two's complement) as the integers they add do.
template <typename T>
T AddWrap(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
}

void Push(Column* c, int64_t t) { c->ts.push_back(t); }

template <typename T>
void AppendRow(const RollupColumn& from, size_t j, RollupColumn* into) {
  into->bucket.push_back(from.bucket[j]);
  into->count.push_back(from.count[j]);
  into->dsum.push_back(from.dsum[j]);
  for (auto [src, dst] : {std::pair{&from.sum, &into->sum}, std::pair{&from.min, &into->min},
                          std::pair{&from.max, &into->max}, std::pair{&from.first, &into->first},
                          std::pair{&from.last, &into->last}}) {
    Push(dst, src->ts[j]);
    NumericValues<T>(*dst).push_back(NumericValues<T>(*src)[j]);
  }
  into->sketch.push_back(from.sketch[j]);
}

template <typename T>
void MergeRow(const RollupColumn& from, size_t j, RollupColumn* into) {
  const size_t i = into->size() - 1;
  into->count[i] += from.count[j];
  NumericValues<T>(into->sum)[i] =
      AddWrap(NumericValues<T>(into->sum)[i], NumericValues<T>(from.sum)[j]);
  // An integer field's double sum is its typed sum's (so stored rows need
  // only the typed one).
  if constexpr (std::is_same_v<T, double>) {
    into->dsum[i] += from.dsum[j];
  } else {
    into->dsum[i] = static_cast<double>(NumericValues<T>(into->sum)[i]);
  }
  T& mn = NumericValues<T>(into->min)[i];
  T& mx = NumericValues<T>(into->max)[i];
  if (NumericValues<T>(from.min)[j] < mn) mn = NumericValues<T>(from.min)[j];
  if (NumericValues<T>(from.max)[j] > mx) mx = NumericValues<T>(from.max)[j];
  if (from.first.ts[j] < into->first.ts[i]) {
    into->first.ts[i] = from.first.ts[j];
    NumericValues<T>(into->first)[i] = NumericValues<T>(from.first)[j];
  }
  if (from.last.ts[j] > into->last.ts[i]) {
    into->last.ts[i] = from.last.ts[j];
    NumericValues<T>(into->last)[i] = NumericValues<T>(from.last)[j];
  }
  into->sketch[i].Merge(from.sketch[j]);
}

template <typename T>
void Build(const Column& raw, size_t begin, size_t end, int64_t width, RollupColumn* out) {
  const T* v = NumericValues<T>(raw).data();
  const int64_t* t = raw.ts.data();
  size_t i = begin;
  while (i < end) {
    const int64_t b = WindowStart(t[i], width);
    const size_t j = EndOfWindowRun(t, i, end, width);
    T sum = 0, mn = v[i], mx = v[i];
    double dsum = 0;
    for (size_t k = i; k < j; ++k) {
      sum = AddWrap(sum, v[k]);
      dsum += static_cast<double>(v[k]);
      if (v[k] < mn) mn = v[k];
      if (v[k] > mx) mx = v[k];
    }
    if constexpr (!std::is_same_v<T, double>) dsum = static_cast<double>(sum);
    out->bucket.push_back(b);
    out->count.push_back(j - i);
    out->dsum.push_back(dsum);
    Push(&out->sum, b);
    NumericValues<T>(out->sum).push_back(sum);
    Push(&out->min, b);
    NumericValues<T>(out->min).push_back(mn);
    Push(&out->max, b);
    NumericValues<T>(out->max).push_back(mx);
    Push(&out->first, t[i]);
    NumericValues<T>(out->first).push_back(v[i]);
    Push(&out->last, t[j - 1]);
    NumericValues<T>(out->last).push_back(v[j - 1]);
    out->sketch.emplace_back();
    out->sketch.back().AddValues(v + i, j - i);
    i = j;
  }
}

void PutSection(std::string* out, const std::string& bytes) {
  PutVarint64(out, bytes.size());
  out->append(bytes);
}

Status Corrupt(const std::string& what) { return Status::Corruption("rollup block: " + what); }

// Integers: zigzag deltas from the previous value, as varints.
void PutInts(const int64_t* v, size_t n, std::string* out) {
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(v[i]) - prev));
    prev = static_cast<uint64_t>(v[i]);
  }
}
bool GetInts(ByteReader* r, size_t n, int64_t* v) {
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t zz = 0;
    if (!r->ReadVarint64(&zz)) return false;
    prev += ZigZagDecode(zz);
    v[i] = static_cast<int64_t>(prev);
  }
  return true;
}

// Doubles: each XORed with the one before, then byte-transposed (all low
// bytes, then the next...), so that the zstd pass over the block finds the
// long runs of equal high bytes that slowly moving values have.
void PutDoubles(const double* v, size_t n, std::string* out) {
  const size_t base = out->size();
  out->resize(base + 8 * n);
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &v[i], 8);
    const uint64_t x = bits ^ prev;
    prev = bits;
    for (size_t b = 0; b < 8; ++b) (*out)[base + b * n + i] = static_cast<char>(x >> (8 * b));
  }
}
bool GetDoubles(ByteReader* r, size_t n, double* v) {
  std::string_view bytes;
  if (!r->ReadBytes(8 * n, &bytes)) return false;
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t x = 0;
    for (size_t b = 0; b < 8; ++b)
      x |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[b * n + i])) << (8 * b);
    prev ^= x;
    std::memcpy(&v[i], &prev, 8);
  }
  return true;
}

// A typed value column of formats 1 and 3 (its times are written separately
// when they differ from the buckets).
bool GetValues(ByteReader* r, size_t n, Column* c) {
  switch (c->type) {
    case FieldType::kInt:
      c->ints.resize(n);
      return GetInts(r, n, c->ints.data());
    case FieldType::kUint:
      c->uints.resize(n);
      return GetInts(r, n, reinterpret_cast<int64_t*>(c->uints.data()));
    default:
      c->floats.resize(n);
      return GetDoubles(r, n, c->floats.data());
  }
}

// Format 4's value columns are each written by a method, a nibble: bit 0
// the predictor each value is a zigzag delta from, the previous row's value
// (kPrevious) or the same row's value of the column's reference (kSameRow:
// max from min, first from min, last from max); bits 1-3 the
// representation, 0 the field type's own (a float column then is
// PutDoubles' bytes, from the previous row) or 1 + k for a float column
// whose every value is m / 10^k exactly (FromDecimal), written as the
// integers m. The five nibbles (sum, min, max, first, last) are in the
// block's header.
constexpr uint8_t kPrevious = 0;
constexpr uint8_t kSameRow = 1;
constexpr size_t kValueColumns = 5;
constexpr size_t kMethodBytes = 3;

size_t DeltaBytes(const int64_t* v, const int64_t* ref, size_t n) {
  size_t bytes = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t base = ref != nullptr ? static_cast<uint64_t>(ref[i]) : prev;
    bytes += VarintLength(ZigZagEncode(static_cast<uint64_t>(v[i]) - base));
    prev = static_cast<uint64_t>(v[i]);
  }
  return bytes;
}
void PutDeltas(const int64_t* v, const int64_t* ref, size_t n, std::string* out) {
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t base = ref != nullptr ? static_cast<uint64_t>(ref[i]) : prev;
    PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(v[i]) - base));
    prev = static_cast<uint64_t>(v[i]);
  }
}
bool GetDeltas(ByteReader* r, const int64_t* ref, size_t n, int64_t* v) {
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t zz = 0;
    if (!r->ReadVarint64(&zz)) return false;
    const uint64_t base = ref != nullptr ? static_cast<uint64_t>(ref[i]) : prev;
    prev = base + ZigZagDecode(zz);
    v[i] = static_cast<int64_t>(prev);
  }
  return true;
}

// The bytes of PutDoubles' form that are not zero: about what the block's
// zstd pass leaves of it (runs of zero high bytes cost next to nothing).
size_t XorBytes(const double* v, size_t n) {
  size_t bytes = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &v[i], 8);
    for (uint64_t x = bits ^ prev; x != 0; x >>= 8) bytes += (x & 0xff) != 0;
    prev = bits;
  }
  return bytes;
}

// Writes n values of `type` (int64_t, uint64_t or double, as `values`
// points to), with `ref` the same row's reference values or null, by the
// method that makes them smallest; returns the method.
uint8_t PutColumn(FieldType type, const void* values, const void* ref, size_t n, std::string* out) {
  if (type != FieldType::kFloat) {
    const auto* v = static_cast<const int64_t*>(values);
    const auto* r = static_cast<const int64_t*>(ref);
    const bool same_row = r != nullptr && DeltaBytes(v, r, n) < DeltaBytes(v, nullptr, n);
    PutDeltas(v, same_row ? r : nullptr, n, out);
    return same_row ? kSameRow : kPrevious;
  }
  const auto* v = static_cast<const double*>(values);
  const int digits = FindDecimalDigits(std::span<const double>(v, n));
  if (digits >= 0) {
    std::vector<int64_t> m(n), mr;
    for (size_t i = 0; i < n; ++i) ToDecimal(v[i], digits, &m[i]);
    if (ref != nullptr) {
      const auto* rv = static_cast<const double*>(ref);
      mr.resize(n);
      for (size_t i = 0; i < n && !mr.empty(); ++i) {
        if (!ToDecimal(rv[i], digits, &mr[i])) mr.clear();
      }
    }
    const size_t previous = DeltaBytes(m.data(), nullptr, n);
    const size_t same_row = mr.empty() ? SIZE_MAX : DeltaBytes(m.data(), mr.data(), n);
    if (std::min(previous, same_row) < XorBytes(v, n)) {
      const uint8_t predictor = same_row < previous ? kSameRow : kPrevious;
      PutDeltas(m.data(), predictor == kSameRow ? mr.data() : nullptr, n, out);
      return static_cast<uint8_t>((1 + digits) << 1 | predictor);
    }
  }
  PutDoubles(v, n, out);
  return kPrevious;
}
bool GetColumn(ByteReader* r, uint8_t method, FieldType type, const void* ref, size_t n,
               void* values) {
  const uint8_t predictor = method & 1, representation = method >> 1;
  if (predictor == kSameRow && ref == nullptr) return false;
  if (type != FieldType::kFloat) {
    return representation == 0 &&
           GetDeltas(r, predictor == kSameRow ? static_cast<const int64_t*>(ref) : nullptr, n,
                     static_cast<int64_t*>(values));
  }
  auto* v = static_cast<double*>(values);
  if (representation == 0) return predictor == kPrevious && GetDoubles(r, n, v);
  const int digits = representation - 1;  // at most 6: the nibble's 3 bits
  std::vector<int64_t> m(n), mr;
  if (predictor == kSameRow) {
    const auto* rv = static_cast<const double*>(ref);
    mr.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (!ToDecimal(rv[i], digits, &mr[i])) return false;
    }
  }
  if (!GetDeltas(r, predictor == kSameRow ? mr.data() : nullptr, n, m.data())) return false;
  for (size_t i = 0; i < n; ++i) {
    // |m| < 2^53, as ToDecimal gives: nothing the encoder could not write.
    if (m[i] >= (int64_t{1} << 53) || m[i] <= -(int64_t{1} << 53)) return false;
    v[i] = FromDecimal(m[i], digits);
  }
  return true;
}

// A column's values as PutColumn and GetColumn take them.
const void* ValuesOf(const Column& c) {
  switch (c.type) {
    case FieldType::kInt:
      return c.ints.data();
    case FieldType::kUint:
      return c.uints.data();
    default:
      return c.floats.data();
  }
}
void* ResizedValues(Column* c, size_t n) {
  switch (c->type) {
    case FieldType::kInt:
      c->ints.resize(n);
      return c->ints.data();
    case FieldType::kUint:
      c->uints.resize(n);
      return c->uints.data();
    default:
      c->floats.resize(n);
      return c->floats.data();
  }
}

// Point times as offsets from their buckets, in units of kTimeUnits[unit].
void PutOffsets(const Column& c, const std::vector<int64_t>& bucket, size_t unit,
                std::string* out) {
  for (size_t i = 0; i < bucket.size(); ++i) {
    PutVarint64(out, (static_cast<uint64_t>(c.ts[i]) - static_cast<uint64_t>(bucket[i])) /
                         static_cast<uint64_t>(kTimeUnits[unit]));
  }
}
bool GetOffsets(ByteReader* r, const std::vector<int64_t>& bucket, size_t unit, Column* c) {
  c->ts.resize(bucket.size());
  for (size_t i = 0; i < bucket.size(); ++i) {
    uint64_t d = 0;
    if (!r->ReadVarint64(&d)) return false;
    // An offset past the int64 range, or a time past it, is a broken block.
    if (d > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(kTimeUnits[unit]))
      return false;
    if (static_cast<__int128>(bucket[i]) + d * static_cast<uint64_t>(kTimeUnits[unit]) >
        INT64_MAX) {
      return false;
    }
    c->ts[i] = static_cast<int64_t>(static_cast<uint64_t>(bucket[i]) +
                                    d * static_cast<uint64_t>(kTimeUnits[unit]));
  }
  return true;
}

// Buckets divided by their unit, as zigzag deltas (format 3).
void PutBuckets(const std::vector<int64_t>& bucket, size_t unit, std::string* out) {
  int64_t prev = 0;
  for (const int64_t b : bucket) {
    const int64_t q = b / kTimeUnits[unit];
    PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(q) - static_cast<uint64_t>(prev)));
    prev = q;
  }
}
bool GetBuckets(ByteReader* r, size_t n, size_t unit, int64_t* bucket) {
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t zz = 0;
    if (!r->ReadVarint64(&zz)) return false;
    prev += ZigZagDecode(zz);
    const __int128 b = static_cast<__int128>(static_cast<int64_t>(prev)) * kTimeUnits[unit];
    if (b < INT64_MIN || b > INT64_MAX) return false;
    bucket[i] = static_cast<int64_t>(b);
  }
  return true;
}

}  // namespace

bool IsOlderFormatRollupBlock(std::string_view data) {
  return !data.empty() && (static_cast<uint8_t>(data[0]) == kRollupFormat1 ||
                           static_cast<uint8_t>(data[0]) == kRollupFormat3);
}

bool IsCurrentFormatRollupBlock(std::string_view data) {
  return !data.empty() && static_cast<uint8_t>(data[0]) == kRollupFormat;
}

bool HasRollups(FieldType type) {
  return type == FieldType::kFloat || type == FieldType::kInt || type == FieldType::kUint;
}

void RollupColumn::Reset(FieldType t) {
  *this = RollupColumn();
  type = t;
  for (Column* c : {&sum, &min, &max, &first, &last}) c->type = t;
}

void BuildRollups(const Column& raw, size_t begin, size_t end, int64_t width, RollupColumn* out) {
  WithType(raw.type, [&](auto tag) { Build<decltype(tag)>(raw, begin, end, width, out); });
}

void CoarsenRollups(const RollupColumn& fine, int64_t width, RollupColumn* out) {
  WithType(fine.type, [&](auto tag) {
    using T = decltype(tag);
    for (size_t j = 0; j < fine.size(); ++j) {
      const int64_t b = WindowStart(fine.bucket[j], width);
      if (out->size() > 0 && out->bucket.back() == b) {
        MergeRow<T>(fine, j, out);
      } else {
        AppendRow<T>(fine, j, out);
        out->bucket.back() = b;
        out->sum.ts.back() = out->min.ts.back() = out->max.ts.back() = b;
      }
    }
  });
}

void AppendRollupRow(const RollupColumn& from, size_t j, RollupColumn* into) {
  WithType(from.type, [&](auto tag) { AppendRow<decltype(tag)>(from, j, into); });
}

void MergeIntoLastRow(const RollupColumn& from, size_t j, RollupColumn* into) {
  WithType(from.type, [&](auto tag) { MergeRow<decltype(tag)>(from, j, into); });
}

// format(u8) compression(u8: 0 none, 1 zstd) then the body, zstd-framed or
// not. Body (format 4): type(u8) rows(varint) units(u8), then sections, each
// varint length + bytes: buckets and counts; sums; min and max; first and
// last; sketches (empty when the rows keep none). Format 4 has the value
// columns' methods (PutColumn) after the units. docs/format/rollups.md.
void EncodeRollups(const RollupColumn& rows, bool sketches, const ZstdDictionary* dict,
                   std::string* out) {
  const size_t n = rows.size();
  // Every part has a value a row (rows decoded with kRollupAll, or built).
  for (const Column* c : {&rows.sum, &rows.min, &rows.max, &rows.first, &rows.last}) {
    assert(c->ts.size() == n);
    (void)c;
  }
  std::string body;
  body.push_back(static_cast<char>(rows.type));
  PutVarint64(&body, n);
  size_t bucket_unit = kTimeUnitCount - 1, offset_unit = kTimeUnitCount - 1;
  for (size_t i = 0; i < n; ++i) {
    bucket_unit = NarrowTimeUnit(rows.bucket[i], bucket_unit);
    for (const Column* c : {&rows.first, &rows.last}) {
      offset_unit = NarrowTimeUnit(static_cast<int64_t>(static_cast<uint64_t>(c->ts[i]) -
                                                        static_cast<uint64_t>(rows.bucket[i])),
                                   offset_unit);
    }
  }
  body.push_back(static_cast<char>(bucket_unit | offset_unit << 4));
  // The column methods' bytes, filled in below.
  const size_t methods_at = body.size();
  body.append(kMethodBytes, '\0');
  uint8_t method[kValueColumns];
  std::string section;
  PutBuckets(rows.bucket, bucket_unit, &section);
  PutInts(reinterpret_cast<const int64_t*>(rows.count.data()), n, &section);
  PutSection(&body, section);
  section.clear();
  // Integer fields: the typed sum only (their double sum is derived from it).
  method[0] =
      PutColumn(rows.type, rows.type == FieldType::kFloat ? rows.dsum.data() : ValuesOf(rows.sum),
                nullptr, n, &section);
  PutSection(&body, section);
  section.clear();
  method[1] = PutColumn(rows.type, ValuesOf(rows.min), nullptr, n, &section);
  method[2] = PutColumn(rows.type, ValuesOf(rows.max), ValuesOf(rows.min), n, &section);
  PutSection(&body, section);
  section.clear();
  PutOffsets(rows.first, rows.bucket, offset_unit, &section);
  method[3] = PutColumn(rows.type, ValuesOf(rows.first), ValuesOf(rows.min), n, &section);
  PutOffsets(rows.last, rows.bucket, offset_unit, &section);
  method[4] = PutColumn(rows.type, ValuesOf(rows.last), ValuesOf(rows.max), n, &section);
  PutSection(&body, section);
  section.clear();
  for (size_t c = 0; c < kValueColumns; ++c) {
    body[methods_at + c / 2] = static_cast<char>(static_cast<uint8_t>(body[methods_at + c / 2]) |
                                                 method[c] << (c % 2 == 0 ? 0 : 4));
  }
  if (sketches) {
    int32_t base = 0;
    for (const Sketch& s : rows.sketch) s.Encode(&section, &base, Sketch::BinForm::kCountAndStep);
  }
  PutSection(&body, section);

  AppendBlock(kRollupFormat, std::move(body), kZstdLevel, dict, out);
}

Status DecodeRollups(std::string_view data, uint32_t parts, const ZstdDictionary* dict,
                     RollupColumn* out) {
  thread_local std::string inflated;
  const uint8_t format = data.empty() ? 0 : static_cast<uint8_t>(data[0]);
  const uint8_t expect =
      format == kRollupFormat1 || format == kRollupFormat3 ? format : kRollupFormat;
  if (const Status framed = OpenBlock(data, expect, kMaxBlockBodyBytes, dict, &inflated, &data);
      !framed.ok()) {
    return Corrupt(framed.message());
  }
  ByteReader r(data);
  uint8_t type_byte = 0;
  uint64_t rows = 0;
  if (!r.ReadByte(&type_byte) || !r.ReadVarint64(&rows)) return Corrupt("truncated header");
  if (!IsValidFieldType(type_byte) || !HasRollups(static_cast<FieldType>(type_byte))) {
    return Corrupt("bad field type " + std::to_string(type_byte));
  }
  // Format 1 wrote nanoseconds.
  size_t bucket_unit = 0, offset_unit = 0;
  if (format != kRollupFormat1) {
    uint8_t units = 0;
    if (!r.ReadByte(&units)) return Corrupt("truncated header");
    bucket_unit = units & 15;
    offset_unit = units >> 4;
    if (bucket_unit >= kTimeUnitCount || offset_unit >= kTimeUnitCount) {
      return Corrupt("bad units " + std::to_string(units));
    }
  }
  // Format 4's columns are written by methods; the earlier formats' are the
  // type's own form from the previous row.
  const bool methods = format == kRollupFormat;
  uint8_t method[kValueColumns] = {};
  if (methods) {
    std::string_view bytes;
    if (!r.ReadBytes(kMethodBytes, &bytes)) return Corrupt("truncated header");
    for (size_t c = 0; c < kValueColumns; ++c) {
      method[c] =
          static_cast<uint8_t>(static_cast<uint8_t>(bytes[c / 2]) >> (c % 2 == 0 ? 0 : 4) & 15);
    }
    if (static_cast<uint8_t>(bytes[2]) >> 4 != 0) return Corrupt("bad column methods");
  }
  // Every row costs at least a byte in the first section.
  if (rows > r.remaining()) return Corrupt("row count past the end");
  const auto type = static_cast<FieldType>(type_byte);
  const size_t n = rows;
  std::string_view sections[5];
  for (std::string_view& s : sections) {
    uint64_t len = 0;
    if (!r.ReadVarint64(&len) || !r.ReadBytes(len, &s)) return Corrupt("truncated section");
  }
  out->Reset(type);
  {
    ByteReader b(sections[0]);
    out->bucket.resize(n);
    out->count.resize(n);
    if (!GetBuckets(&b, n, bucket_unit, out->bucket.data()) ||
        !GetInts(&b, n, reinterpret_cast<int64_t*>(out->count.data()))) {
      return Corrupt("bad buckets");
    }
  }
  const auto get = [&](ByteReader* b, size_t column, const Column* ref, Column* c) {
    if (!methods) return GetValues(b, n, c);
    return GetColumn(b, method[column], type, ref != nullptr ? ValuesOf(*ref) : nullptr, n,
                     ResizedValues(c, n));
  };
  if (parts & kRollupSum) {
    ByteReader b(sections[1]);
    out->sum.ts = out->bucket;
    if (type == FieldType::kFloat) {
      if (!get(&b, 0, nullptr, &out->sum)) return Corrupt("bad sums");
      out->dsum = out->sum.floats;
    } else {
      if (!get(&b, 0, nullptr, &out->sum)) return Corrupt("bad sums");
      out->dsum.resize(n);
      for (size_t i = 0; i < n; ++i) {
        out->dsum[i] = type == FieldType::kInt ? static_cast<double>(out->sum.ints[i])
                                               : static_cast<double>(out->sum.uints[i]);
      }
    }
  }
  // First and last of format 4 may be written from min and max (a
  // kSameRow method): those are read for them when they were not asked
  // for, and dropped after.
  const bool ends_need_extremes =
      methods && (parts & kRollupFirstLast) && ((method[3] | method[4]) & kSameRow);
  const bool extremes = (parts & kRollupMinMax) || ends_need_extremes;
  if (extremes) {
    ByteReader b(sections[2]);
    out->min.ts = out->max.ts = out->bucket;
    if (!get(&b, 1, nullptr, &out->min) || !get(&b, 2, &out->min, &out->max)) {
      return Corrupt("bad extremes");
    }
  }
  if (parts & kRollupFirstLast) {
    ByteReader b(sections[3]);
    if (!GetOffsets(&b, out->bucket, offset_unit, &out->first) ||
        !get(&b, 3, &out->min, &out->first) ||
        !GetOffsets(&b, out->bucket, offset_unit, &out->last) ||
        !get(&b, 4, &out->max, &out->last)) {
      return Corrupt("bad first and last");
    }
  }
  if (extremes && !(parts & kRollupMinMax)) {
    out->min.Clear();
    out->max.Clear();
  }
  if (parts & kRollupSketch) {
    // Rows that keep no sketch (format 3, a tier other than the sketches')
    // decode as empty ones.
    std::string_view s = sections[4];
    out->sketch.resize(n);
    int32_t base = 0;
    const Sketch::BinForm bins =
        methods ? Sketch::BinForm::kCountAndStep : Sketch::BinForm::kNibbles;
    if (!s.empty() || format == kRollupFormat1) {
      for (Sketch& sk : out->sketch) {
        if (!sk.Decode(&s, &base, bins)) return Corrupt("bad sketch");
      }
    }
    if (!s.empty()) return Corrupt("trailing sketch bytes");
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
