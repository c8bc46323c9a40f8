#include "engine/head.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "storage/float_codec.h"

namespace gpulse::engine {

// A (timestamp, value word) pair.
struct Head::Slot {
  int64_t ts;
  uint64_t word;
};

// The open run of a column (see head.h): the encoding of its points, bit by
// bit, right after this header, and what the next point's encoding needs.
// Bit i of the run is bit i % 8 of byte i / 8; the buffer is zero past the
// bits written, so a point is or-ed in (PutBits), and has 8 bytes more than
// its capacity for PutBits' word stores.
//   time: the run's first is first_ts; each later one's step from the one
//     before changes by 0 (a 0 bit) or by a zigzagged c (a 1 bit, c's width
//     less one in 6 bits, c);
//   value, as a code word: the last one again (a 0 bit), or a change. The
//     code word of a double is its bits, whose change is their XOR, or when
//     the run's doubles are decimals of k digits (331.9 W), m = v*10^k, as
//     for integers (a double that is not has the run encoded again at the
//     digits it needs, or the XOR way); other types' is the word, whose
//     change is the difference zigzagged. A change whose set bits lie in the last new
//     window is "10" and the window's bits; else "11", a new window and its
//     bits (XOR: leading zeros and length less one, 6 bits each; others:
//     width less one, 6 bits).
struct Head::Open {
  // `digits` before the run's first point.
  static constexpr int8_t kUndecided = -2;

  uint32_t count = 0;          // points encoded
  uint32_t bits = 0;           // bits written
  uint16_t capacity = 0;       // bytes of room after the header (and 8 more)
  uint16_t second_end = 0;     // bits written by the first two points
  uint8_t lead = 0;            // the window: XOR's leading zeros
  uint8_t width = 0;           // its length in bits (0: none yet)
  int8_t digits = kUndecided;  // doubles: the decimal digits k, or -1 for XOR
  int64_t first_ts = 0;
  int64_t ts = 0;     // the last encoded point's time,
  int64_t step = 0;   // its step from the one before,
  uint64_t word = 0;  // and its code word

  uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(this + 1); }
};

// A full block packed: its payload bytes right after this header.
struct Head::Packed {
  Packed* next = nullptr;  // the next newer block; the newest's is the oldest
  int64_t min_ts = 0;      // its slots' range, whatever their order
  int64_t max_ts = 0;
  uint32_t count = 0;
  uint32_t bytes = 0;

  const uint8_t* payload() const { return reinterpret_cast<const uint8_t*>(this + 1); }
};

namespace {

using Slot = Head::Slot;
static_assert(sizeof(Head::Entry) == 48 && sizeof(Head::Open) == 48 && sizeof(Slot) == 16 &&
              sizeof(Head::Packed) == 32);

// An open run holds up to kMostSlots points before they are packed: a busy
// column packs 64 at a time.
constexpr uint32_t kMostSlots = 64;
// A run's room starts at kFirstOpenBytes and grows by powers of two
// (Head::kOpenClasses sizes); a point takes at most kMaxPointBits.
constexpr uint32_t kFirstOpenBytes = 32;
constexpr uint32_t kMaxPointBits = (1 + 6 + 64) + (2 + 12 + 64);
constexpr uint32_t BytesFor(uint32_t bits) { return (bits + 7) / 8; }
static_assert(BytesFor(kMaxPointBits) <= kFirstOpenBytes);
static_assert(BytesFor(kMostSlots * kMaxPointBits) <= kFirstOpenBytes << 6);
// Slabs double from 4 KiB to 256 KiB, so a small head stays small and a
// full one takes few allocations.
constexpr size_t kFirstSlabBytes = 4 << 10;
constexpr size_t kMostSlabBytes = 256 << 10;

// Fixed cost of a column in the head: its entry and the series' share of
// the entry vector.
constexpr uint64_t kEntryOverhead = sizeof(Head::Entry) + 16;
// A wide series' column in the hash index: key, value, node and bucket.
constexpr uint64_t kWideIndexOverhead = 48;

uint64_t WideKey(uint32_t series_id, uint32_t field_id) {
  return uint64_t{series_id} << 32 | field_id;
}

// Bits needed for x (0 for 0).
int BitWidth(uint64_t x) { return 64 - std::countl_zero(x); }

// Bit packing of values of up to 64 bits into a buffer, little-endian (the
// writer's whole words and the reader's loads are in host order).
static_assert(std::endian::native == std::endian::little);
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  void Put(uint64_t value, int width) {
    if (width == 0) return;
    acc_ |= value << fill_;
    if (fill_ + width >= 64) {
      Flush64();
      acc_ = fill_ + width == 64 ? 0 : value >> (64 - fill_);
      fill_ = fill_ + width - 64;
    } else {
      fill_ += width;
    }
  }
  // Writes what is left; returns the bytes written in all.
  size_t Finish() {
    for (int b = 0; b < fill_; b += 8) out_[n_++] = static_cast<uint8_t>(acc_ >> b);
    return n_;
  }

 private:
  void Flush64() {
    std::memcpy(out_ + n_, &acc_, 8);
    n_ += 8;
  }
  uint8_t* out_;
  size_t n_ = 0;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

// Reads what BitWriter wrote, eight bytes a load while eight remain before
// `end` (the payload's end: nothing past it is read).
class BitReader {
 public:
  BitReader(const uint8_t* in, const uint8_t* end) : start_(in), in_(in), end_(end) {}
  // Past the last byte a Get took bits from.
  const uint8_t* end() const { return start_ + (consumed_ + 7) / 8; }
  uint64_t Get(int width) {
    if (width == 0) return 0;
    consumed_ += static_cast<size_t>(width);
    if (width <= left_) return Take(width);
    const int have = left_;
    const uint64_t low = acc_;  // have < width <= 64 bits
    Refill();
    return low | (Take(width - have) << have);
  }

 private:
  uint64_t Take(int width) {
    const uint64_t value = width == 64 ? acc_ : acc_ & ((uint64_t{1} << width) - 1);
    acc_ = width == 64 ? 0 : acc_ >> width;
    left_ -= width;
    return value;
  }
  void Refill() {
    const size_t n = std::min<size_t>(8, static_cast<size_t>(end_ - in_));
    acc_ = 0;
    std::memcpy(&acc_, in_, n);
    in_ += n;
    left_ = static_cast<int>(8 * n);
  }
  const uint8_t* start_;
  const uint8_t* in_;
  const uint8_t* end_;
  size_t consumed_ = 0;  // bits
  uint64_t acc_ = 0;
  int left_ = 0;
};

void PutU64(uint8_t** p, uint64_t v) {
  std::memcpy(*p, &v, 8);
  *p += 8;
}
uint64_t GetU64(const uint8_t** p) {
  uint64_t v;
  std::memcpy(&v, *p, 8);
  *p += 8;
  return v;
}

// Frame of reference: the least value, a width, and each value's offset
// from the least in that many bits. `is_signed` orders the words as int64.
template <typename Get>
void PackFor(uint32_t n, bool is_signed, Get&& get, uint8_t** p) {
  if (n == 0) {
    PutU64(p, 0);
    *(*p)++ = 0;
    return;
  }
  uint64_t least = get(0), most = least;
  for (uint32_t i = 1; i < n; ++i) {
    const uint64_t v = get(i);
    const bool less = is_signed ? static_cast<int64_t>(v) < static_cast<int64_t>(least) : v < least;
    const bool more = is_signed ? static_cast<int64_t>(v) > static_cast<int64_t>(most) : v > most;
    if (less) least = v;
    if (more) most = v;
  }
  const int width = BitWidth(most - least);
  PutU64(p, least);
  *(*p)++ = static_cast<uint8_t>(width);
  BitWriter bits(*p);
  for (uint32_t i = 0; i < n; ++i) bits.Put(get(i) - least, width);
  *p += bits.Finish();
}

template <typename Set>
void UnpackFor(uint32_t n, const uint8_t** p, const uint8_t* end, Set&& set) {
  const uint64_t least = GetU64(p);
  const int width = *(*p)++;
  BitReader bits(*p, end);
  for (uint32_t i = 0; i < n; ++i) set(i, least + bits.Get(width));
  *p += (static_cast<size_t>(width) * n + 7) / 8;
}

// The bits that hold the spread of n words (signed: ordered as int64).
template <typename Get>
int SpreadWidth(uint32_t n, bool is_signed, Get&& get) {
  if (n == 0) return 0;
  uint64_t least = get(0), most = least;
  for (uint32_t i = 1; i < n; ++i) {
    const uint64_t v = get(i);
    if (is_signed ? static_cast<int64_t>(v) < static_cast<int64_t>(least) : v < least) least = v;
    if (is_signed ? static_cast<int64_t>(v) > static_cast<int64_t>(most) : v > most) most = v;
  }
  return BitWidth(most - least);
}

// Integer words, as the smaller of a frame of reference over the words and
// one over their steps (a counter's steps are small where its values are
// not): a byte 0 or 1, then that frame.
void PackWords(const uint64_t* words, uint32_t n, bool is_signed, uint8_t** p) {
  const auto word = [&](uint32_t i) { return words[i]; };
  const auto step = [&](uint32_t i) { return words[i + 1] - words[i]; };
  const size_t as_words = size_t{1} * SpreadWidth(n, is_signed, word) * n;
  const size_t as_steps = 64 + size_t{1} * SpreadWidth(n - 1, true, step) * (n - 1);
  if (as_steps < as_words) {
    *(*p)++ = 1;
    PutU64(p, words[0]);
    PackFor(n - 1, true, step, p);
  } else {
    *(*p)++ = 0;
    PackFor(n, is_signed, word, p);
  }
}

void UnpackWords(const uint8_t** p, const uint8_t* end, uint32_t n, uint64_t* words) {
  if (*(*p)++ == 1) {
    words[0] = GetU64(p);
    UnpackFor(n - 1, p, end, [&](uint32_t i, uint64_t step) { words[i + 1] = words[i] + step; });
  } else {
    UnpackFor(n, p, end, [&](uint32_t i, uint64_t word) { words[i] = word; });
  }
}

// The most bytes Pack writes for n slots: the timestamps (8 bytes, then at
// most 71 bits a step), a frame of reference (at most 18 bytes of header
// and 8 bytes a value) and three method bytes.
constexpr size_t MaxPackedBytes(uint32_t n) {
  return 8 + (71 * size_t{n} + 7) / 8 + 18 + 8 * n + 3;
}

uint64_t ZigZag(uint64_t v) { return (v << 1) ^ (0 - (v >> 63)); }
uint64_t UnZigZag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

// Timestamps: the first, then for each step its change from the step before
// (the first step's from 0): a 0 bit when there is none, else a 1 bit, the
// change's width less one in 6 bits and the change zigzagged in that many.
// A steady interval costs a bit a point; a point that came late, two
// changes (a frame of reference over the steps would widen all 63 of them).
void PackTimes(const Slot* slots, uint32_t n, uint8_t** p) {
  PutU64(p, static_cast<uint64_t>(slots[0].ts));
  BitWriter bits(*p);
  uint64_t step_before = 0;
  for (uint32_t i = 1; i < n; ++i) {
    const uint64_t step =
        static_cast<uint64_t>(slots[i].ts) - static_cast<uint64_t>(slots[i - 1].ts);
    const uint64_t change = ZigZag(step - step_before);
    step_before = step;
    if (change == 0) {
      bits.Put(0, 1);
      continue;
    }
    const int width = BitWidth(change);
    bits.Put(1, 1);
    bits.Put(static_cast<uint64_t>(width - 1), 6);
    bits.Put(change, width);
  }
  *p += bits.Finish();
}

void UnpackTimes(const uint8_t** p, const uint8_t* end, uint32_t n, Slot* out) {
  uint64_t ts = GetU64(p);
  out[0].ts = static_cast<int64_t>(ts);
  BitReader bits(*p, end);
  uint64_t step = 0;
  for (uint32_t i = 1; i < n; ++i) {
    if (bits.Get(1) != 0) {
      const int width = static_cast<int>(bits.Get(6)) + 1;
      step += UnZigZag(bits.Get(width));
    }
    ts += step;
    out[i].ts = static_cast<int64_t>(ts);
  }
  *p = bits.end();
}

// Doubles' method byte: their bits XOR the value before, or decimals of
// kDecimal + k digits.
constexpr uint8_t kXor = 0;
constexpr uint8_t kDecimal = 1;

// Packs n >= 1 slots of a column of `type`:
//   the timestamps (PackTimes);
//   doubles: when all are decimals of k <= 6 digits (a sensor's 331.9 W),
//   the integers m = v * 10^k as integer words; else each word XOR the one
//   before, shifted right by the fewest trailing zeros, as a frame of
//   reference (a gauge's repeated values share their high bits);
//   other types: the words as integer words (signed for integers).
size_t Pack(FieldType type, const Slot* slots, uint32_t n, uint8_t* out) {
  uint8_t* p = out;
  PackTimes(slots, n, &p);
  uint64_t words[kMostSlots];
  if (type != FieldType::kFloat) {
    for (uint32_t i = 0; i < n; ++i) words[i] = slots[i].word;
    PackWords(words, n, type == FieldType::kInt, &p);
    return static_cast<size_t>(p - out);
  }
  int digits = 0;
  for (uint32_t i = 0; i < n && digits >= 0; ++i) {
    int64_t m;
    const double v = std::bit_cast<double>(slots[i].word);
    while (!storage::ToDecimal(v, digits, &m)) {
      if (++digits > storage::kMaxDecimalDigits) {
        digits = -1;
        break;
      }
    }
  }
  for (uint32_t i = 0; i < n && digits >= 0; ++i) {
    int64_t m;
    // Exact at fewer digits is exact at more while |m| < 2^53; checked all
    // the same, the unpacker must get every value back.
    if (!storage::ToDecimal(std::bit_cast<double>(slots[i].word), digits, &m)) digits = -1;
    words[i] = static_cast<uint64_t>(m);
  }
  if (digits >= 0) {
    *p++ = static_cast<uint8_t>(kDecimal + digits);
    PackWords(words, n, true, &p);
    return static_cast<size_t>(p - out);
  }
  int shift = 64;
  for (uint32_t i = 0; i < n; ++i) {
    words[i] = slots[i].word ^ (i ? slots[i - 1].word : 0);
    if (words[i] != 0) shift = std::min(shift, std::countr_zero(words[i]));
  }
  if (shift == 64) shift = 0;
  *p++ = kXor;
  *p++ = static_cast<uint8_t>(shift);
  PackFor(
      n, false, [&](uint32_t i) { return words[i] >> shift; }, &p);
  return static_cast<size_t>(p - out);
}

void Unpack(FieldType type, const Head::Packed& packed, Slot* out) {
  const uint32_t n = packed.count;
  const uint8_t* p = packed.payload();
  const uint8_t* end = p + packed.bytes;
  UnpackTimes(&p, end, n, out);
  uint64_t words[kMostSlots];
  if (type != FieldType::kFloat) {
    UnpackWords(&p, end, n, words);
    for (uint32_t i = 0; i < n; ++i) out[i].word = words[i];
    return;
  }
  const uint8_t method = *p++;
  if (method >= kDecimal) {
    const int digits = method - kDecimal;
    UnpackWords(&p, end, n, words);
    for (uint32_t i = 0; i < n; ++i) {
      out[i].word =
          std::bit_cast<uint64_t>(storage::FromDecimal(static_cast<int64_t>(words[i]), digits));
    }
    return;
  }
  const int shift = *p++;
  UnpackFor(n, &p, end, [&](uint32_t i, uint64_t x) {
    out[i].word = (x << shift) ^ (i ? out[i - 1].word : 0);
  });
}

// Ors the low `width` bits of `value` in at bit *bits of `data`, which is
// zero from there and has 9 bytes of room past it.
void PutBits(uint8_t* data, uint32_t* bits, uint64_t value, int width) {
  if (width == 0) return;
  if (width < 64) value &= (uint64_t{1} << width) - 1;
  uint8_t* at = data + (*bits >> 3);
  const int shift = static_cast<int>(*bits & 7);
  uint64_t word;
  std::memcpy(&word, at, 8);
  word |= value << shift;
  std::memcpy(at, &word, 8);
  if (shift + width > 64) at[8] |= static_cast<uint8_t>(value >> (64 - shift));
  *bits += static_cast<uint32_t>(width);
}

// One point's encoding in an open run, worked out before it is written (so
// the run is given room for exactly its bits).
struct PointCode {
  int64_t step = 0;
  uint64_t time_change = 0;  // zigzagged; 0: the step is the last one's
  uint64_t word = 0;         // the code word
  uint64_t change = 0;       // of the code word; 0: the same as the last
  bool new_window = false;
  int lead = 0, width = 0;  // the window its bits are written in
  uint32_t bits = 0;
};

// The code word of `word` in `run`, or false when the run is decimal and
// the double has no decimal form at its digits.
bool CodeWord(FieldType type, const Head::Open& run, uint64_t word, uint64_t* code) {
  if (type != FieldType::kFloat || run.digits < 0) {
    *code = word;
    return true;
  }
  int64_t m;
  if (!storage::ToDecimal(std::bit_cast<double>(word), run.digits, &m)) return false;
  *code = static_cast<uint64_t>(m);
  return true;
}

// `slot`'s encoding after the run's points; false as CodeWord.
bool CodePoint(FieldType type, const Slot& slot, const Head::Open& run, PointCode* code) {
  if (!CodeWord(type, run, slot.word, &code->word)) return false;
  code->bits = 0;
  if (run.count > 0) {
    code->step =
        static_cast<int64_t>(static_cast<uint64_t>(slot.ts) - static_cast<uint64_t>(run.ts));
    code->time_change = ZigZag(static_cast<uint64_t>(code->step) - static_cast<uint64_t>(run.step));
    code->bits += code->time_change == 0 ? 1 : 7 + BitWidth(code->time_change);
  }
  const uint64_t last = run.count > 0 ? run.word : 0;
  const bool xor_words = type == FieldType::kFloat && run.digits < 0;
  code->change = xor_words ? code->word ^ last : ZigZag(code->word - last);
  code->new_window = false;
  if (code->change == 0) {
    code->bits += 1;
  } else if (xor_words) {
    const int lead = std::countl_zero(code->change);
    const int trail = std::countr_zero(code->change);
    if (run.count > 0 && run.width != 0 && lead >= run.lead && trail >= 64 - run.lead - run.width) {
      code->lead = run.lead;
      code->width = run.width;
      code->bits += 2 + run.width;
    } else {
      code->new_window = true;
      code->lead = lead;
      code->width = 64 - lead - trail;
      code->bits += 14 + code->width;
    }
  } else {
    const int width = BitWidth(code->change);
    if (run.count > 0 && run.width != 0 && width <= run.width) {
      code->width = run.width;
      code->bits += 2 + run.width;
    } else {
      code->new_window = true;
      code->width = width;
      code->bits += 8 + width;
    }
  }
  return true;
}

// Writes `code` (of `slot`) after the run's points; the run has room.
void WritePoint(FieldType type, const Slot& slot, const PointCode& code, Head::Open* run) {
  uint8_t* data = run->data();
  if (run->count == 0) {
    run->first_ts = slot.ts;
    run->step = 0;
  } else {
    if (code.time_change == 0) {
      PutBits(data, &run->bits, 0, 1);
    } else {
      const int width = BitWidth(code.time_change);
      PutBits(data, &run->bits, 1 | static_cast<uint64_t>(width - 1) << 1, 7);
      PutBits(data, &run->bits, code.time_change, width);
    }
    run->step = code.step;
  }
  const bool xor_words = type == FieldType::kFloat && run->digits < 0;
  if (code.change == 0) {
    PutBits(data, &run->bits, 0, 1);
  } else if (!code.new_window) {
    PutBits(data, &run->bits, 0b01, 2);  // "10": the first bit is the low one
    PutBits(data, &run->bits,
            xor_words ? code.change >> (64 - code.lead - code.width) : code.change, code.width);
  } else if (xor_words) {
    PutBits(data, &run->bits, 0b11, 2);
    PutBits(data, &run->bits,
            static_cast<uint64_t>(code.lead) | static_cast<uint64_t>(code.width - 1) << 6, 12);
    PutBits(data, &run->bits, code.change >> (64 - code.lead - code.width), code.width);
    run->lead = static_cast<uint8_t>(code.lead);
    run->width = static_cast<uint8_t>(code.width);
  } else {
    PutBits(data, &run->bits, 0b11 | static_cast<uint64_t>(code.width - 1) << 2, 8);
    PutBits(data, &run->bits, code.change, code.width);
    run->width = static_cast<uint8_t>(code.width);
  }
  run->ts = slot.ts;
  run->word = code.word;
  ++run->count;
  // The first value's window is its own size, not a change's: the second
  // sets the first window that later changes reuse.
  if (run->count == 1) run->lead = run->width = 0;
  if (run->count == 2) run->second_end = static_cast<uint16_t>(run->bits);
}

// The digits of a run that starts with `slot`: the fewest decimal digits
// of a double's decimal form, or -1 when it has none.
int8_t RunDigits(FieldType type, const Slot& slot) {
  if (type != FieldType::kFloat) return -1;
  int64_t m;
  for (int k = 0; k <= storage::kMaxDecimalDigits; ++k) {
    if (storage::ToDecimal(std::bit_cast<double>(slot.word), k, &m)) return static_cast<int8_t>(k);
  }
  return -1;
}

// The run's points, decoded into out[0, run.count).
void DecodeRun(FieldType type, const Head::Open& run, Slot* out) {
  BitReader bits(run.data(), run.data() + run.capacity);
  int64_t ts = run.first_ts;
  uint64_t step = 0, word = 0;
  int lead = 0, width = 0;
  const bool xor_words = type == FieldType::kFloat && run.digits < 0;
  for (uint32_t i = 0; i < run.count; ++i) {
    if (i > 0) {
      if (bits.Get(1) != 0) step += UnZigZag(bits.Get(static_cast<int>(bits.Get(6)) + 1));
      ts = static_cast<int64_t>(static_cast<uint64_t>(ts) + step);
    }
    if (bits.Get(1) != 0) {
      if (xor_words) {
        if (bits.Get(1) != 0) {
          lead = static_cast<int>(bits.Get(6));
          width = static_cast<int>(bits.Get(6)) + 1;
        }
        word ^= bits.Get(width) << (64 - lead - width);
      } else {
        if (bits.Get(1) != 0) width = static_cast<int>(bits.Get(6)) + 1;
        word += UnZigZag(bits.Get(width));
      }
    }
    const uint64_t value =
        type == FieldType::kFloat && run.digits >= 0
            ? std::bit_cast<uint64_t>(storage::FromDecimal(static_cast<int64_t>(word), run.digits))
            : word;
    out[i] = Slot{ts, value};
  }
}

}  // namespace

Head::Head() = default;

Head::~Head() {
  for (const std::vector<Entry>& entries : series_) {
    for (const Entry& entry : entries) {
      if (entry.open != nullptr) FreeOpen(entry.open);
    }
  }
}

void* Head::Allocate(size_t bytes) {
  bytes = (bytes + 7) & ~size_t{7};
  if (slab_left_ < bytes) {
    slab_size_ = slab_size_ == 0 ? kFirstSlabBytes : std::min(kMostSlabBytes, 2 * slab_size_);
    // Not value-initialised: everything cut from it is written first.
    slabs_.push_back(std::make_unique_for_overwrite<std::byte[]>(slab_size_));
    slab_free_ = slabs_.back().get();
    slab_left_ = slab_size_;
    bytes_ += slab_size_;
  }
  void* out = slab_free_;
  slab_free_ += bytes;
  slab_left_ -= bytes;
  return out;
}

Head::Open* Head::NewOpen(uint32_t capacity) {
  const size_t bytes = sizeof(Open) + capacity + 8;
  void* memory = std::malloc(bytes);
  if (memory == nullptr) throw std::bad_alloc();
  Open* run = new (memory) Open;
  run->capacity = static_cast<uint16_t>(capacity);
  std::memset(run->data(), 0, capacity + 8);
  bytes_ += bytes;
  return run;
}

void Head::FreeOpen(Open* run) {
  bytes_ -= sizeof(Open) + run->capacity + 8;
  run->~Open();
  std::free(run);
}

void Head::Encode(Entry* entry, const Slot& slot) {
  if (entry->open == nullptr) {
    entry->open = NewOpen(kFirstOpenBytes);
  } else if (entry->open->count == kMostSlots) {
    PackOpen(entry);
  }
  Open* run = entry->open;
  if (run->digits == Open::kUndecided) run->digits = RunDigits(entry->type, slot);
  PointCode code;
  if (!CodePoint(entry->type, slot, *run, &code)) {
    // A double without the run's decimal form: the run is encoded again at
    // the digits it needs (300 W, then 303.7), or the XOR way when it has
    // none. Each time the digits grow or go, so this ends.
    Slot slots[kMostSlots];
    const uint32_t n = run->count;
    DecodeRun(entry->type, *run, slots);
    std::memset(run->data(), 0, BytesFor(run->bits) + 8);
    run->count = run->bits = 0;
    const int8_t needed = RunDigits(entry->type, slot);
    run->digits = needed > run->digits ? needed : int8_t{-1};
    for (uint32_t i = 0; i < n; ++i) Encode(entry, slots[i]);
    Encode(entry, slot);
    return;
  }
  if (BytesFor(run->bits + code.bits) > run->capacity) {
    // Room for the rest of the run at its bits a point so far (the first
    // two points, which carry a whole time and value, left out): every
    // column of a fleet grows at once, and fewer growths copy less.
    const uint32_t per_point =
        run->count > 2 ? (run->bits - run->second_end) / (run->count - 2) : code.bits;
    const uint32_t projected = run->bits + code.bits + per_point * (kMostSlots - 1 - run->count);
    uint32_t capacity = 2 * run->capacity;
    while (capacity < (kFirstOpenBytes << (kOpenClasses - 1)) && capacity < BytesFor(projected)) {
      capacity *= 2;
    }
    Open* bigger = NewOpen(capacity);
    std::memcpy(static_cast<void*>(bigger), run, sizeof(Open));
    bigger->capacity = static_cast<uint16_t>(capacity);
    std::memcpy(bigger->data(), run->data(), BytesFor(run->bits));
    FreeOpen(run);
    entry->open = run = bigger;
  }
  WritePoint(entry->type, slot, code, run);
}

void Head::PackOpen(Entry* entry) {
  Open* run = entry->open;
  Slot slots[kMostSlots];
  DecodeRun(entry->type, *run, slots);
  thread_local uint8_t scratch[MaxPackedBytes(kMostSlots)];
  const size_t bytes = Pack(entry->type, slots, run->count, scratch);
  Packed* packed = new (Allocate(sizeof(Packed) + bytes)) Packed;
  packed->min_ts = packed->max_ts = slots[0].ts;
  for (uint32_t i = 1; i < run->count; ++i) {
    packed->min_ts = std::min(packed->min_ts, slots[i].ts);
    packed->max_ts = std::max(packed->max_ts, slots[i].ts);
  }
  packed->count = run->count;
  packed->bytes = static_cast<uint32_t>(bytes);
  std::memcpy(packed + 1, scratch, bytes);
  if (entry->last == nullptr) {
    packed->next = packed;
  } else {
    packed->next = entry->last->next;
    entry->last->next = packed;
  }
  entry->last = packed;
  // The buffer is kept for the next run: a column's runs are alike.
  std::memset(run->data(), 0, BytesFor(run->bits) + 8);
  run->count = run->bits = 0;
  run->digits = Open::kUndecided;
}

void Head::Push(Entry* entry, const Slot& slot) {
  // The newest point so far joins the open run.
  if (entry->size > 0) Encode(entry, Slot{entry->last_ts, entry->last_word});
  // Equal times count as unsorted too: a rebuilt column may hold two points
  // of one time (written apart, the one between them erased).
  if (entry->size > 0 && slot.ts <= entry->last_ts) entry->sorted = false;
  ++entry->size;
  entry->last_ts = slot.ts;
  entry->last_word = slot.word;
}

uint64_t Head::Word(const FieldValueRef& value) {
  switch (value.index()) {
    case 0:
      return std::bit_cast<uint64_t>(*std::get_if<double>(&value));
    case 1:
      return static_cast<uint64_t>(*std::get_if<int64_t>(&value));
    case 2:
      return *std::get_if<uint64_t>(&value);
    case 3:
      return *std::get_if<bool>(&value) ? 1 : 0;
    default: {
      const std::string_view text = *std::get_if<std::string_view>(&value);
      strings_.emplace_back(text);
      // A string longer than the inline buffer also takes its bytes on the heap.
      bytes_ += sizeof(std::string) + (text.size() > 15 ? text.size() + 1 : 0);
      return strings_.size() - 1;
    }
  }
}

void Head::Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
                  const FieldValueRef& value, size_t position_hint, size_t fields_hint) {
  if (series_id >= series_.size()) series_.resize(series_id + 1);
  std::vector<Entry>& columns = series_[series_id];
  const size_t at = IndexOf(series_id, field_id, position_hint);
  if (at == columns.size()) {
    if (columns.empty() && fields_hint > 1) columns.reserve(fields_hint);
    Entry& added = columns.emplace_back();
    added.series_id = series_id;
    added.field_id = field_id;
    added.type = type;
    bytes_ += kEntryOverhead;
    if (columns.size() > kScanUpTo) {
      // The series just became wide (index every column) or grew.
      for (size_t i = columns.size() == kScanUpTo + 1 ? 0 : at; i < columns.size(); ++i) {
        wide_.emplace(WideKey(series_id, columns[i].field_id), static_cast<uint32_t>(i));
        bytes_ += kWideIndexOverhead;
      }
    }
  }
  Entry& entry = columns[at];
  if (entry.size > 0 && ts == entry.last_ts) {
    // The same time written again: the new value replaces the newest,
    // which the entry keeps as it is.
    entry.last_word = Word(value);
    return;
  }
  Push(&entry, Slot{ts, Word(value)});
  ++values_;
  if (ts < min_ts_) min_ts_ = ts;
  if (ts > max_ts_) max_ts_ = ts;
}

void Head::PrefetchEntries(uint32_t series_id) const {
  if (series_id >= series_.size()) return;
  const std::vector<Entry>& columns = series_[series_id];
  const char* first = reinterpret_cast<const char*>(columns.data());
  const char* last = reinterpret_cast<const char*>(columns.data() + columns.size());
  for (const char* line = first; line < last; line += 64) __builtin_prefetch(line, 1);
}

void Head::PrefetchEnds(uint32_t series_id) const {
  if (series_id >= series_.size()) return;
  for (const Entry& entry : series_[series_id]) {
    if (entry.open != nullptr) __builtin_prefetch(entry.open->data() + entry.open->bits / 8, 1);
  }
}

void Head::AppendSlots(FieldType type, const Slot* slots, uint32_t n, Column* out) const {
  for (uint32_t i = 0; i < n; ++i) out->ts.push_back(slots[i].ts);
  switch (type) {
    case FieldType::kFloat:
      for (uint32_t i = 0; i < n; ++i) out->floats.push_back(std::bit_cast<double>(slots[i].word));
      break;
    case FieldType::kInt:
      for (uint32_t i = 0; i < n; ++i) out->ints.push_back(static_cast<int64_t>(slots[i].word));
      break;
    case FieldType::kUint:
      for (uint32_t i = 0; i < n; ++i) out->uints.push_back(slots[i].word);
      break;
    case FieldType::kBool:
      for (uint32_t i = 0; i < n; ++i) out->bools.push_back(slots[i].word != 0);
      break;
    case FieldType::kString:
      for (uint32_t i = 0; i < n; ++i) out->strings.push_back(strings_[slots[i].word]);
      break;
  }
}

uint32_t Head::DecodeOpen(const Entry& entry, Slot* out) {
  if (entry.size == 0) return 0;
  uint32_t n = 0;
  if (entry.open != nullptr) {
    DecodeRun(entry.type, *entry.open, out);
    n = entry.open->count;
  }
  out[n++] = Slot{entry.last_ts, entry.last_word};
  return n;
}

const Head::Packed* Head::Oldest(const Entry& entry) {
  return entry.last == nullptr ? nullptr : entry.last->next;
}

const Head::Packed* Head::Newer(const Entry& entry, const Packed* p) {
  return p == entry.last ? nullptr : p->next;
}

template <typename Fn>
void Head::ForEachRun(const Entry& entry, Fn&& fn) const {
  Slot unpacked[kMostSlots + 1];
  for (const Packed* p = Oldest(entry); p != nullptr; p = Newer(entry, p)) {
    Unpack(entry.type, *p, unpacked);
    fn(unpacked, p->count);
  }
  const uint32_t n = DecodeOpen(entry, unpacked);
  if (n > 0) fn(unpacked, n);
}

void Head::AppendColumn(const Entry& entry, Column* out) const {
  ForEachRun(entry, [&](const Slot* slots, uint32_t n) { AppendSlots(entry.type, slots, n, out); });
}

void Head::CopyRange(uint32_t series_id, uint32_t field_id, int64_t start, int64_t end,
                     Column* out) const {
  const Entry* found = Find(series_id, field_id);
  if (found == nullptr || found->size == 0) return;
  const Entry& entry = *found;
  Slot unpacked[kMostSlots + 1];
  if (!entry.sorted) {
    // The points in range, in the order written, sorted stably: the last
    // written of each time wins, as in the whole column (a point outside
    // the range never replaces one inside). Only blocks that meet the
    // range are unpacked.
    thread_local std::vector<Slot> hits;
    hits.clear();
    const auto keep = [&](const Slot* slots, uint32_t n) {
      for (uint32_t i = 0; i < n; ++i) {
        if (slots[i].ts >= start && slots[i].ts < end) hits.push_back(slots[i]);
      }
    };
    for (const Packed* p = Oldest(entry); p != nullptr; p = Newer(entry, p)) {
      if (p->max_ts < start || p->min_ts >= end) continue;
      Unpack(entry.type, *p, unpacked);
      keep(unpacked, p->count);
    }
    keep(unpacked, DecodeOpen(entry, unpacked));
    std::stable_sort(hits.begin(), hits.end(),
                     [](const Slot& a, const Slot& b) { return a.ts < b.ts; });
    size_t kept = 0;
    for (size_t i = 0; i < hits.size(); ++i) {
      if (i + 1 < hits.size() && hits[i + 1].ts == hits[i].ts) continue;
      hits[kept++] = hits[i];
    }
    AppendSlots(entry.type, hits.data(), static_cast<uint32_t>(kept), out);
    return;
  }
  const auto cut = [&](const Slot* slots, uint32_t n) {
    const auto before = [](const Slot& s, int64_t t) { return s.ts < t; };
    const Slot* from = std::lower_bound(slots, slots + n, start, before);
    const Slot* to = std::lower_bound(from, slots + n, end, before);
    AppendSlots(entry.type, from, static_cast<uint32_t>(to - from), out);
  };
  // Sorted: only the blocks that meet the range are unpacked, and the first
  // block past it ends the search.
  for (const Packed* p = Oldest(entry); p != nullptr; p = Newer(entry, p)) {
    if (p->max_ts < start) continue;
    if (p->min_ts >= end) return;
    Unpack(entry.type, *p, unpacked);
    cut(unpacked, p->count);
  }
  cut(unpacked, DecodeOpen(entry, unpacked));
}

const Head::Entry* Head::Find(uint32_t series_id, uint32_t field_id) const {
  if (series_id >= series_.size()) return nullptr;
  const std::vector<Entry>& columns = series_[series_id];
  const size_t at = IndexOf(series_id, field_id, 0);
  return at == columns.size() ? nullptr : &columns[at];
}

size_t Head::IndexOf(uint32_t series_id, uint32_t field_id, size_t hint) const {
  const std::vector<Entry>& columns = series_[series_id];
  if (hint < columns.size() && columns[hint].field_id == field_id) return hint;
  if (columns.size() > kScanUpTo) {
    const auto it = wide_.find(WideKey(series_id, field_id));
    return it == wide_.end() ? columns.size() : it->second;
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].field_id == field_id) return i;
  }
  return columns.size();
}

void Head::Rebuild(Entry* entry, const std::vector<Slot>& slots) {
  // The old packed blocks stay in their slab, charged, until the head goes.
  entry->last = nullptr;
  if (entry->open != nullptr) {
    std::memset(entry->open->data(), 0, entry->open->capacity + 8);
    entry->open->count = entry->open->bits = 0;
    entry->open->digits = Open::kUndecided;
  }
  entry->size = 0;
  entry->sorted = true;
  for (const Slot& slot : slots) Push(entry, slot);
}

void Head::Erase(uint32_t series_id, int64_t first, int64_t last) {
  if (series_id >= series_.size()) return;
  std::vector<Slot> kept;
  for (Entry& e : series_[series_id]) {
    if (e.size == 0) continue;
    kept.clear();
    ForEachRun(e, [&](const Slot* slots, uint32_t n) {
      for (uint32_t i = 0; i < n; ++i) {
        if (slots[i].ts < first || slots[i].ts > last) kept.push_back(slots[i]);
      }
    });
    if (kept.size() == e.size) continue;
    values_ -= e.size - kept.size();
    Rebuild(&e, kept);
  }
}

}  // namespace gpulse::engine
