#include "storage/integer_codec.h"

#include <algorithm>
#include <bit>

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

void Integrate(std::vector<uint64_t>* r, size_t begin, int order) {
  for (int pass = order; pass-- > 0;) {
    for (size_t i = begin + pass + 1; i < r->size(); ++i) (*r)[i] += (*r)[i - 1];
  }
}

void PutRangeStream(const std::string& stream, std::string* out) {
  PutVarint64(out, stream.size());
  out->append(stream);
}

size_t VarintLength(uint64_t v) { return static_cast<size_t>(std::bit_width(v | 1) + 6) / 7; }

// Bytes PackBitPacked writes, computed without writing them.
size_t BitPackedSize(std::span<const uint64_t> tail) {
  size_t size = 0;
  for (size_t start = 0; start < tail.size(); start += kBlockSize) {
    auto block = tail.subspan(start, std::min(kBlockSize, tail.size() - start));
    auto [lo_it, hi_it] = std::minmax_element(block.begin(), block.end());
    size_t width = static_cast<size_t>(std::bit_width(*hi_it - *lo_it));
    size += VarintLength(*lo_it) + 1 + (block.size() * width + 7) / 8;
  }
  return size;
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

// Range-coded streams of noisy gauges take ~3-9 bits a value; reserving that
// up front keeps the coder's appends from reallocating.
std::string RangeStreamBuffer(size_t values) {
  std::string stream;
  stream.reserve(values + 16);
  return stream;
}

void PackAdaptive(std::span<const uint64_t> tail, std::string* out) {
  std::string stream = RangeStreamBuffer(tail.size());
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

// The dictionary ids of a tail (0 = escape: a value not in the dictionary),
// found with a small open-addressing hash table: the dictionary never holds
// more than kMaxDictionary values, so 512 slots keep probes short.
void DictionaryIds(std::span<const uint64_t> tail, std::vector<uint8_t>* ids) {
  constexpr int kSlotBits = 9;
  constexpr size_t kSlots = size_t{1} << kSlotBits;
  uint64_t keys[kSlots];
  uint8_t slot_ids[kSlots] = {};  // 0 = empty slot
  size_t size = 0;
  ids->resize(tail.size());
  for (size_t i = 0; i < tail.size(); ++i) {
    uint64_t v = tail[i];
    size_t slot = (v * 0x9E3779B97F4A7C15u) >> (64 - kSlotBits);
    while (slot_ids[slot] != 0 && keys[slot] != v) slot = (slot + 1) & (kSlots - 1);
    uint8_t id = slot_ids[slot];
    if (id == 0 && size < kMaxDictionary) {
      keys[slot] = v;
      slot_ids[slot] = static_cast<uint8_t>(++size);
    }
    (*ids)[i] = id;
  }
}

void PackDictionary(std::span<const uint64_t> tail, std::span<const uint8_t> ids, bool zigzagged,
                    std::string* out) {
  std::string stream = RangeStreamBuffer(tail.size());
  RangeEncoder enc(&stream);
  AdaptiveIntModel escapes;
  Prob id_probs[256];
  uint64_t prev = 0;
  for (size_t i = 0; i < tail.size(); ++i) {
    enc.EncodeTree(id_probs, 8, ids[i]);
    uint64_t x = Unmap(tail[i], zigzagged);
    if (ids[i] == 0) escapes.Encode(ZigZagEncode(x - prev), &enc);
    prev = x;
  }
  enc.Finish();
  PutRangeStream(stream, out);
}

// Bits of the dictionary stream: the ids' entropy plus, per escape, a guess
// at what the escape model spends (its bit length, plus a few bits of length
// code while it learns: escapes are rare, so it never learns much).
double EstimateDictionaryBits(std::span<const uint64_t> tail, std::span<const uint8_t> ids,
                              bool zigzagged) {
  constexpr double kEscapeOverheadBits = 4;
  uint32_t counts[256] = {};
  double escape_bits = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < tail.size(); ++i) {
    ++counts[ids[i]];
    uint64_t x = Unmap(tail[i], zigzagged);
    if (ids[i] == 0) escape_bits += std::bit_width(ZigZagEncode(x - prev)) + kEscapeOverheadBits;
    prev = x;
  }
  return AdaptiveIntModel::HistogramBits(counts, 256) + escape_bits;
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

void MapTail(std::span<const uint64_t> residuals, int order, Mapped* m) {
  size_t head = std::min(residuals.size(), static_cast<size_t>(order));
  auto tail = residuals.subspan(head);
  m->tail.resize(tail.size());
  if (order == 0) {
    // Signed minimum: the mapping is exact mod 2^64 whichever is used, and
    // signed suits int64 data and uint64 data below 2^63 alike.
    int64_t lo = tail.empty() ? 0 : static_cast<int64_t>(tail[0]);
    for (uint64_t v : tail) lo = std::min(lo, static_cast<int64_t>(v));
    m->min = static_cast<uint64_t>(lo);
    for (size_t i = 0; i < tail.size(); ++i) m->tail[i] = tail[i] - m->min;
  } else {
    for (size_t i = 0; i < tail.size(); ++i) m->tail[i] = ZigZagEncode(tail[i]);
  }
}

// The part of an integer section before the packed tail: the first `order`
// residuals, and the minimum for order 0.
void PutHead(std::span<const uint64_t> residuals, int order, const Mapped& mapped,
             std::string* out) {
  size_t head = std::min(residuals.size(), static_cast<size_t>(order));
  for (size_t i = 0; i < head; ++i) PutVarint64(out, ZigZagEncode(residuals[i]));
  if (order == 0 && !residuals.empty()) PutVarint64(out, ZigZagEncode(mapped.min));
}

// A candidate encoding of the tail and the estimate that ranks it.
struct Candidate {
  int order;
  Packing packing;
  double bytes;  // estimated size of the packed tail
};

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
  // residuals[0..order) are the heads of every order: differencing in place
  // leaves the lower-order differences there.
  std::vector<uint64_t> residuals(values.begin(), values.end());
  Mapped mapped[kMaxOrder + 1];
  for (int order = 0; order <= kMaxOrder; ++order) {
    for (size_t i = residuals.size(); order > 0 && i-- > static_cast<size_t>(order);) {
      residuals[i] -= residuals[i - 1];
    }
    MapTail(residuals, order, &mapped[order]);
    // A constant tail is as small as an encoding gets; the lowest order that
    // has one wins outright.
    if (IsConstant(mapped[order].tail)) {
      PutHead(residuals, order, mapped[order], out);
      if (!mapped[order].tail.empty() && order > 0) PutVarint64(out, mapped[order].tail[0]);
      return MethodByte(order, kConstant);
    }
  }

  // Range coding is the expensive part of encoding, so the range-coded
  // candidates are ranked by estimate (AdaptiveIntModel::EstimateBits) and
  // only the best, or the best two when their estimates are close, are
  // coded. Bit packing's size is exact and cheap. The dictionary is tried on
  // deltas only: order 0 and 2 dictionaries decode but never won on real
  // telemetry.
  constexpr double kStreamOverheadBytes = 6;  // coder flush + length varint
  constexpr double kCloseRatio = 1.03;
  Candidate best_packed{0, kBitPacked, 0};
  std::vector<Candidate> coded;
  for (int order = 0; order <= kMaxOrder; ++order) {
    double packed = static_cast<double>(BitPackedSize(mapped[order].tail));
    if (order == 0 || packed < best_packed.bytes) best_packed = {order, kBitPacked, packed};
    double adaptive = AdaptiveIntModel::EstimateBits(mapped[order].tail) / 8;
    coded.push_back({order, kAdaptive, adaptive + kStreamOverheadBytes});
  }
  std::vector<uint8_t> ids;
  DictionaryIds(mapped[1].tail, &ids);
  coded.push_back({1, kDictionary,
                   EstimateDictionaryBits(mapped[1].tail, ids, true) / 8 + kStreamOverheadBytes});
  std::sort(coded.begin(), coded.end(),
            [](const Candidate& a, const Candidate& b) { return a.bytes < b.bytes; });

  std::string best;
  uint8_t best_method = 0;
  for (size_t i = 0; i < 2; ++i) {
    const Candidate& c = coded[i];
    if (i > 0 && c.bytes > coded[0].bytes * kCloseRatio) break;
    // A clearly smaller bit packing is not worth coding anything for.
    if (best_packed.bytes * kCloseRatio < c.bytes) break;
    std::string candidate;
    PutHead(residuals, c.order, mapped[c.order], &candidate);
    if (c.packing == kDictionary) {
      PackDictionary(mapped[c.order].tail, ids, true, &candidate);
    } else {
      PackAdaptive(mapped[c.order].tail, &candidate);
    }
    if (best.empty() || candidate.size() < best.size()) {
      best = std::move(candidate);
      best_method = MethodByte(c.order, c.packing);
    }
  }
  const Mapped& packed = mapped[best_packed.order];
  std::string packed_head;
  PutHead(residuals, best_packed.order, packed, &packed_head);
  if (best.empty() || packed_head.size() + static_cast<size_t>(best_packed.bytes) <= best.size()) {
    out->append(packed_head);
    PackBitPacked(packed.tail, out);
    return MethodByte(best_packed.order, kBitPacked);
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
