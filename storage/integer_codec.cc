#include "storage/integer_codec.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "storage/adaptive_int_model.h"
#include "storage/bit_stream.h"
#include "storage/coding.h"
#include "storage/range_coder.h"

namespace gpulse::storage {

namespace {

enum Packing : uint8_t {
  kConstant = 0,
  kBitPacked = 1,
  kAdaptive = 2,
  kDictionary = 3,
};
constexpr int kMaxOrder = 2;
constexpr size_t kBlockSize = 128;
// Dictionary ids are coded in 8 bits; id 0 is the escape for a new residual.
constexpr size_t kMaxDictionary = 255;

uint8_t MethodByte(int order, Packing packing) {
  return static_cast<uint8_t>((order << 4) | packing);
}

// residual[i] = difference of order `order` at i; the first `order` entries
// are lower-order differences so the sequence can be integrated back.
std::vector<uint64_t> Residuals(std::span<const uint64_t> values, int order) {
  std::vector<uint64_t> r(values.begin(), values.end());
  for (int pass = 0; pass < order; ++pass) {
    for (size_t i = r.size(); i-- > static_cast<size_t>(pass + 1);) r[i] -= r[i - 1];
  }
  return r;
}

void Integrate(std::vector<uint64_t>* r, size_t begin, int order) {
  for (int pass = order; pass-- > 0;) {
    for (size_t i = begin + pass + 1; i < r->size(); ++i) (*r)[i] += (*r)[i - 1];
  }
}

void PutRangeStream(const std::string& stream, std::string* out) {
  PutVarint64(out, stream.size());
  out->append(stream);
}

void PackBitPacked(std::span<const uint64_t> tail, std::string* out) {
  for (size_t start = 0; start < tail.size(); start += kBlockSize) {
    auto block = tail.subspan(start, std::min(kBlockSize, tail.size() - start));
    auto [lo_it, hi_it] = std::minmax_element(block.begin(), block.end());
    uint64_t lo = *lo_it, hi = *hi_it;
    int width = std::bit_width(hi - lo);
    PutVarint64(out, lo);
    out->push_back(static_cast<char>(width));
    BitWriter bits(out);
    for (uint64_t v : block) bits.Write(v - lo, width);
    bits.Finish();
  }
}

void PackAdaptive(std::span<const uint64_t> tail, std::string* out) {
  std::string stream;
  RangeEncoder enc(&stream);
  AdaptiveIntModel model;
  for (uint64_t v : tail) model.Encode(v, &enc);
  enc.Finish();
  PutRangeStream(stream, out);
}

// Residuals seen before are sent as their dictionary id (first-appearance
// order); new ones as an escape plus their difference from the previous
// residual. This is what catches a counter whose per-minute increment is one
// of a few dozen values (bytes moved at a given utilisation). The difference
// is taken between signed residuals (zigzag undone) when `zigzagged`.
uint64_t Unmap(uint64_t z, bool zigzagged) { return zigzagged ? ZigZagDecode(z) : z; }

void PackDictionary(std::span<const uint64_t> tail, bool zigzagged, std::string* out) {
  std::string stream;
  RangeEncoder enc(&stream);
  AdaptiveIntModel escapes;
  Prob ids[256];
  std::unordered_map<uint64_t, uint32_t> index;
  uint64_t prev = 0;
  for (uint64_t v : tail) {
    auto it = index.find(v);
    if (it != index.end()) {
      enc.EncodeTree(ids, 8, it->second + 1);
    } else {
      enc.EncodeTree(ids, 8, 0);
      escapes.Encode(ZigZagEncode(Unmap(v, zigzagged) - prev), &enc);
      if (index.size() < kMaxDictionary) index.emplace(v, static_cast<uint32_t>(index.size()));
    }
    prev = Unmap(v, zigzagged);
  }
  enc.Finish();
  PutRangeStream(stream, out);
}

void Pack(Packing packing, std::span<const uint64_t> tail, bool zigzagged, std::string* out) {
  switch (packing) {
    case kConstant:
      // An order-0 constant tail is all zero offsets from its minimum.
      if (!tail.empty() && zigzagged) PutVarint64(out, tail[0]);
      return;
    case kBitPacked:
      return PackBitPacked(tail, out);
    case kAdaptive:
      return PackAdaptive(tail, out);
    case kDictionary:
      return PackDictionary(tail, zigzagged, out);
  }
}

bool IsConstant(std::span<const uint64_t> tail) {
  return std::all_of(tail.begin(), tail.end(), [&](uint64_t v) { return v == tail[0]; });
}

// The tail in the unsigned form the packers take: offsets from the minimum
// for order 0 (non-negative, so no zigzag bit is spent), zigzagged residuals
// otherwise.
struct Mapped {
  uint64_t min = 0;  // order 0 only, as int64
  std::vector<uint64_t> tail;
};

Mapped MapTail(std::span<const uint64_t> residuals, int order) {
  Mapped m;
  size_t head = std::min(residuals.size(), static_cast<size_t>(order));
  auto tail = residuals.subspan(head);
  if (order == 0) {
    // Signed minimum: the mapping is exact mod 2^64 whichever is used, and
    // signed suits int64 data and uint64 data below 2^63 alike.
    int64_t lo = 0;
    for (size_t i = 0; i < tail.size(); ++i) {
      int64_t v = static_cast<int64_t>(tail[i]);
      if (i == 0 || v < lo) lo = v;
    }
    m.min = static_cast<uint64_t>(lo);
    for (uint64_t v : tail) m.tail.push_back(v - m.min);
  } else {
    for (uint64_t v : tail) m.tail.push_back(ZigZagEncode(v));
  }
  return m;
}

std::string EncodeWith(std::span<const uint64_t> residuals, int order, const Mapped& mapped,
                       Packing packing) {
  std::string out;
  size_t head = std::min(residuals.size(), static_cast<size_t>(order));
  for (size_t i = 0; i < head; ++i) PutVarint64(&out, ZigZagEncode(residuals[i]));
  if (order == 0 && !residuals.empty()) PutVarint64(&out, ZigZagEncode(mapped.min));
  Pack(packing, mapped.tail, order > 0, &out);
  return out;
}

Status Corrupt(const char* what) { return Status::Corruption(std::string("integers: ") + what); }

Status ReadZigZag(ByteReader* in, uint64_t* value) {
  uint64_t zz;
  if (!in->ReadVarint64(&zz)) return Corrupt("truncated varint");
  *value = ZigZagDecode(zz);
  return Status::Ok();
}

Status UnpackBitPacked(uint32_t n, ByteReader* in, std::vector<uint64_t>* out) {
  for (uint32_t start = 0; start < n; start += kBlockSize) {
    uint32_t len = std::min<uint32_t>(kBlockSize, n - start);
    uint64_t lo;
    uint8_t width;
    if (!in->ReadVarint64(&lo) || !in->ReadByte(&width)) return Corrupt("truncated block header");
    if (width > 64) return Corrupt("bit width above 64");
    std::string_view packed;
    if (!in->ReadBytes((uint64_t{len} * width + 7) / 8, &packed)) return Corrupt("truncated block");
    BitReader bits(packed);
    for (uint32_t i = 0; i < len; ++i) {
      uint64_t v = 0;
      if (!bits.Read(width, &v)) return Corrupt("truncated block");
      out->push_back(v + lo);
    }
  }
  return Status::Ok();
}

Status ReadRangeStream(ByteReader* in, std::string_view* stream) {
  uint64_t len;
  if (!in->ReadVarint64(&len) || !in->ReadBytes(len, stream)) return Corrupt("truncated stream");
  return Status::Ok();
}

Status FinishRange(const RangeDecoder& dec) {
  if (!dec.ok()) return Corrupt("range stream too short");
  if (!dec.AtEnd()) return Corrupt("range stream has trailing bytes");
  return Status::Ok();
}

Status UnpackAdaptive(uint32_t n, ByteReader* in, std::vector<uint64_t>* out) {
  std::string_view stream;
  GPULSE_RETURN_IF_ERROR(ReadRangeStream(in, &stream));
  RangeDecoder dec(stream);
  AdaptiveIntModel model;
  for (uint32_t i = 0; i < n && dec.ok(); ++i) {
    uint64_t zz;
    if (!model.Decode(&dec, &zz)) return Corrupt("bad bit length");
    out->push_back(zz);
  }
  return FinishRange(dec);
}

Status UnpackDictionary(uint32_t n, bool zigzagged, ByteReader* in, std::vector<uint64_t>* out) {
  std::string_view stream;
  GPULSE_RETURN_IF_ERROR(ReadRangeStream(in, &stream));
  RangeDecoder dec(stream);
  AdaptiveIntModel escapes;
  Prob ids[256];
  std::vector<uint64_t> dictionary;
  uint64_t prev = 0;
  for (uint32_t i = 0; i < n && dec.ok(); ++i) {
    uint32_t id = dec.DecodeTree(ids, 8);
    uint64_t v;
    if (id == 0) {
      uint64_t zz;
      if (!escapes.Decode(&dec, &zz)) return Corrupt("bad bit length");
      uint64_t x = prev + ZigZagDecode(zz);
      v = zigzagged ? ZigZagEncode(x) : x;
      if (dictionary.size() < kMaxDictionary) dictionary.push_back(v);
    } else {
      if (id > dictionary.size()) return Corrupt("dictionary id out of range");
      v = dictionary[id - 1];
    }
    out->push_back(v);
    prev = Unmap(v, zigzagged);
  }
  return FinishRange(dec);
}

Status Unpack(Packing packing, uint32_t n, bool zigzagged, ByteReader* in,
              std::vector<uint64_t>* out) {
  switch (packing) {
    case kConstant: {
      if (n == 0) return Status::Ok();
      uint64_t v = 0;
      if (zigzagged && !in->ReadVarint64(&v)) return Corrupt("truncated varint");
      out->insert(out->end(), n, v);
      return Status::Ok();
    }
    case kBitPacked:
      return UnpackBitPacked(n, in, out);
    case kAdaptive:
      return UnpackAdaptive(n, in, out);
    case kDictionary:
      return UnpackDictionary(n, zigzagged, in, out);
  }
  return Corrupt("unknown packing");
}

}  // namespace

uint8_t EncodeIntegers(std::span<const uint64_t> values, std::string* out) {
  std::vector<uint64_t> residuals[kMaxOrder + 1];
  Mapped mapped[kMaxOrder + 1];
  for (int order = 0; order <= kMaxOrder; ++order) {
    residuals[order] = Residuals(values, order);
    mapped[order] = MapTail(residuals[order], order);
  }

  // A constant tail is as small as an encoding gets; the lowest order that
  // has one wins outright.
  for (int order = 0; order <= kMaxOrder; ++order) {
    if (IsConstant(mapped[order].tail)) {
      out->append(EncodeWith(residuals[order], order, mapped[order], kConstant));
      return MethodByte(order, kConstant);
    }
  }
  // Bit packing is cheap to try; range coding is the expensive part of
  // encoding, so only the orders that won on real telemetry are tried for the
  // dictionary (order 0 and 2 dictionaries decode but are never chosen).
  static constexpr struct {
    int order;
    Packing packing;
  } kCandidates[] = {
      {0, kBitPacked}, {1, kBitPacked}, {2, kBitPacked},  {0, kAdaptive},
      {1, kAdaptive},  {2, kAdaptive},  {1, kDictionary},
  };
  std::string best;
  uint8_t best_method = 0;
  for (const auto& c : kCandidates) {
    std::string candidate = EncodeWith(residuals[c.order], c.order, mapped[c.order], c.packing);
    if (best.empty() || candidate.size() < best.size()) {
      best = std::move(candidate);
      best_method = MethodByte(c.order, c.packing);
    }
  }
  out->append(best);
  return best_method;
}

Status DecodeIntegers(uint8_t method, uint32_t count, ByteReader* in, std::vector<uint64_t>* out) {
  int order = method >> 4;
  auto packing = static_cast<Packing>(method & 0x0f);
  if (order > kMaxOrder || packing > kDictionary) return Corrupt("unknown method");
  size_t begin = out->size();
  uint32_t head = std::min<uint32_t>(count, order);
  for (uint32_t i = 0; i < head; ++i) {
    uint64_t v = 0;
    GPULSE_RETURN_IF_ERROR(ReadZigZag(in, &v));
    out->push_back(v);
  }
  uint64_t min = 0;
  if (order == 0 && count > 0) GPULSE_RETURN_IF_ERROR(ReadZigZag(in, &min));
  size_t tail_begin = out->size();
  GPULSE_RETURN_IF_ERROR(Unpack(packing, count - head, order > 0, in, out));
  if (out->size() - begin != count) return Corrupt("short stream");
  for (size_t i = tail_begin; i < out->size(); ++i) {
    (*out)[i] = order == 0 ? (*out)[i] + min : ZigZagDecode((*out)[i]);
  }
  Integrate(out, begin, order);
  return Status::Ok();
}

std::string IntegerMethodName(uint8_t method) {
  static const char* const kOrders[] = {"value", "delta", "delta2"};
  static const char* const kPackings[] = {"constant", "bitpacked", "adaptive", "dictionary"};
  int order = method >> 4, packing = method & 0x0f;
  if (order > kMaxOrder || packing > kDictionary) return "unknown";
  return std::string(kOrders[order]) + "/" + kPackings[packing];
}

}  // namespace gpulse::storage
