#include "storage/chunk_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "storage/coding.h"
#include "storage/float_codec.h"
#include "storage/gorilla_codec.h"
#include "storage/integer_codec.h"
#include "storage/time_unit.h"
#include "tests/support/first_version_chunks.h"
#include "tests/support/time_units.h"

namespace gpulse::storage {
namespace {

using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;

std::vector<int64_t> Grid(size_t n, int64_t step = kMinute) {
  std::vector<int64_t> ts(n);
  for (size_t i = 0; i < n; ++i) ts[i] = kT0 + static_cast<int64_t>(i) * step;
  return ts;
}

std::vector<uint64_t> Bits(const std::vector<double>& v) {
  std::vector<uint64_t> out;
  for (double d : v) out.push_back(std::bit_cast<uint64_t>(d));
  return out;
}

// The start of the UTC day holding kT0: the base a chunk of kT0's window
// is written with.
constexpr int64_t kWindow = kT0 - kT0 % (24 * 60 * kMinute);

// Encodes, decodes and checks every field bit for bit; returns the size
// written with the base of kT0's day window. With base 0 too.
size_t RoundTrip(const Column& in) {
  for (const int64_t base : {int64_t{0}, kWindow}) {
    std::string chunk;
    EncodeChunk(in, base, &chunk);
    Column out;
    if (!DecodeChunk(chunk, base, &out).ok() || out.ts != in.ts) {
      ADD_FAILURE() << "base " << base;
    }
  }
  std::string chunk;
  EncodeChunk(in, kWindow, &chunk);
  Column out;
  out.ints = {99};  // DecodeChunk must replace, not append
  Status s = DecodeChunk(chunk, kWindow, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.type, in.type);
  EXPECT_EQ(out.ts, in.ts);
  EXPECT_EQ(Bits(out.floats), Bits(in.floats));
  EXPECT_EQ(out.ints, in.ints);
  EXPECT_EQ(out.uints, in.uints);
  EXPECT_EQ(out.bools, in.bools);
  EXPECT_EQ(out.strings, in.strings);
  ChunkInfo info;
  EXPECT_TRUE(ReadChunkInfo(chunk, kWindow, &info).ok());
  EXPECT_EQ(info.count, in.size());
  EXPECT_EQ(info.type, in.type);
  if (!in.ts.empty()) {
    EXPECT_EQ(info.min_ts, *std::min_element(in.ts.begin(), in.ts.end()));
    EXPECT_EQ(info.max_ts, *std::max_element(in.ts.begin(), in.ts.end()));
  }
  return chunk.size();
}

Column Floats(std::vector<double> v, std::vector<int64_t> ts = {}) {
  Column c;
  c.type = FieldType::kFloat;
  c.ts = ts.empty() ? Grid(v.size()) : ts;
  c.floats = std::move(v);
  return c;
}

Column Ints(std::vector<int64_t> v, std::vector<int64_t> ts = {}) {
  Column c;
  c.type = FieldType::kInt;
  c.ts = ts.empty() ? Grid(v.size()) : ts;
  c.ints = std::move(v);
  return c;
}

Column Uints(std::vector<uint64_t> v) {
  Column c;
  c.type = FieldType::kUint;
  c.ts = Grid(v.size());
  c.uints = std::move(v);
  return c;
}

// The value codec byte sits at offset 4 of the header (docs/format/chunks.md).
uint8_t ValueMethod(const Column& c) {
  std::string chunk;
  EncodeChunk(c, 0, &chunk);
  return static_cast<uint8_t>(chunk[4]);
}

TEST(ChunkCodecTest, ZeroPoints) {
  for (FieldType t : {FieldType::kFloat, FieldType::kInt, FieldType::kUint, FieldType::kBool,
                      FieldType::kString}) {
    Column c;
    c.type = t;
    EXPECT_LE(RoundTrip(c), 8u);  // header, plus empty string tables
  }
}

TEST(ChunkCodecTest, OnePoint) {
  RoundTrip(Floats({612.3}));
  RoundTrip(Floats({std::numeric_limits<double>::quiet_NaN()}));
  RoundTrip(Ints({std::numeric_limits<int64_t>::min()}, {std::numeric_limits<int64_t>::min()}));
  RoundTrip(Uints({std::numeric_limits<uint64_t>::max()}));
}

TEST(ChunkCodecTest, FloatEdgeValuesBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,
                           -0.0,
                           nan,
                           -nan,
                           std::bit_cast<double>(uint64_t{0x7ff0000000000001}),  // signalling
                           std::bit_cast<double>(uint64_t{0xfff8dead0000beef}),  // payload
                           inf,
                           -inf,
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           DBL_MIN / 3,
                           DBL_MAX,
                           -DBL_MAX,
                           DBL_MIN,
                           1.0,
                           0.1 + 0.2};
  Column c = Floats(v);
  RoundTrip(c);
  EXPECT_EQ(ValueMethod(c), static_cast<uint8_t>(FloatMethod::kGorilla));
}

TEST(ChunkCodecTest, DecimalFloatsUseIntegerForm) {
  std::vector<double> v;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1440; ++i) v.push_back(static_cast<double>(3000 + rng() % 400) / 10.0);
  Column c = Floats(v);
  EXPECT_EQ(FindDecimalDigits(v), 1);
  EXPECT_EQ(ValueMethod(c), static_cast<uint8_t>(FloatMethod::kDecimal));
  size_t bytes = RoundTrip(c);
  // ~8.6 bits of entropy per delta; Gorilla needs about 5 bytes a value here.
  EXPECT_LT(bytes, 1440u * 13 / 8);
}

TEST(ChunkCodecTest, DecimalDetection) {
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{1.0, 2.0, -7.0}), 0);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{612.3, 0.25}), 2);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{0.000001}), 6);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{0.0000001}), -1);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{0.1 + 0.2}), -1);  // 0.30000000000000004
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{1.5, -0.0}), -1);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{1.5, std::nan("")}), -1);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{1e300}), -1);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{9007199254740992.0}), -1);  // 2^53
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{9007199254740991.0}), 0);
}

TEST(ChunkCodecTest, DecimalDetectionRoundsHalfToEven) {
  // Halves at k = 0 are not integers; their scaled forms at k = 1 are exact.
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{2.5, -2.5, 0.5, -0.5, 3.0}), 1);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{4503599627370497.0, -4503599627370497.0}), 0);
  EXPECT_EQ(FindDecimalDigits(std::vector<double>{-0.001, 0.999}), 3);
}

// The float codec picks its form from GorillaEncodedSize before writing.
TEST(ChunkCodecTest, GorillaEncodedSizeIsExact) {
  std::mt19937_64 rng(19);
  std::vector<std::vector<double>> inputs = {{}, {1.0}, {0.1 + 0.2, 0.1 + 0.2}};
  std::vector<double> sine, noise, mixed;
  for (int i = 0; i < 1000; ++i) {
    sine.push_back(std::sin(i) * 1e3);
    noise.push_back(std::bit_cast<double>(rng()));
    mixed.push_back(i % 50 == 0 ? std::bit_cast<double>(rng()) : 612.3 + (i % 7) * 1e-9);
  }
  inputs.push_back(sine);
  inputs.push_back(noise);
  inputs.push_back(mixed);
  for (const auto& v : inputs) {
    std::string out;
    EncodeGorilla(v, &out);
    EXPECT_EQ(GorillaEncodedSize(v), out.size()) << v.size();
  }
}

TEST(ChunkCodecTest, DecimalFallbackKeepsExactValues) {
  // One value that is not a short decimal sends the chunk down the Gorilla
  // path, and every value must still come back exactly.
  std::vector<double> v(100, 612.3);
  v[50] = 0.1 + 0.2;
  Column c = Floats(v);
  EXPECT_EQ(ValueMethod(c), static_cast<uint8_t>(FloatMethod::kGorilla));
  RoundTrip(c);
  v[50] = -0.0;
  RoundTrip(Floats(v));
}

TEST(ChunkCodecTest, IntegerExtremes) {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> alternating;
  for (int i = 0; i < 300; ++i) alternating.push_back(i % 2 ? lo : hi);
  RoundTrip(Ints(alternating));
  RoundTrip(Ints({lo, hi, 0, -1, 1, lo + 1, hi - 1, lo, lo, hi, hi}));
  std::vector<uint64_t> u;
  for (int i = 0; i < 300; ++i) u.push_back(i % 3 == 0 ? ~uint64_t{0} : uint64_t(i) * 977);
  RoundTrip(Uints(u));
  RoundTrip(Uints({0, ~uint64_t{0}, 0, ~uint64_t{0}}));
}

TEST(ChunkCodecTest, IntegerShapes) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> noise, counter, random, steps;
  int64_t total = 171198588053049;
  for (int i = 0; i < 1440; ++i) {
    noise.push_back(85 + static_cast<int64_t>(rng() % 7) - 3);
    total += static_cast<int64_t>(1703 + rng() % 90) * 1000000000;
    counter.push_back(total);
    random.push_back(static_cast<int64_t>(rng()));
    steps.push_back(i / 100);
  }
  EXPECT_LT(RoundTrip(Ints(noise)), 1440u * 3 / 8 + 60);  // ~2.8 bits of entropy
  RoundTrip(Ints(counter));
  RoundTrip(Ints(random));
  RoundTrip(Ints(steps));
}

TEST(ChunkCodecTest, EveryIntegerMethodRoundTrips) {
  // Each shape is built to make a different method the smallest.
  std::mt19937_64 rng(3);
  std::vector<std::vector<uint64_t>> shapes(4);
  for (int i = 0; i < 1000; ++i) {
    shapes[0].push_back(7);                 // constant
    shapes[1].push_back(uint64_t(i) * 60);  // constant delta
    shapes[2].push_back(rng() % 1000);      // noise
    shapes[3].push_back(shapes[3].empty() ? 5 : shapes[3].back() + 1000003 * (1 + rng() % 4));
  }
  std::set<uint8_t> methods;
  for (const auto& values : shapes) {
    std::string out;
    uint8_t method = EncodeIntegers(values, &out);
    methods.insert(method);
    ByteReader in(out);
    std::vector<uint64_t> back;
    ASSERT_TRUE(DecodeIntegers(method, values.size(), &in, &back).ok()) << int{method};
    EXPECT_EQ(back, values) << IntegerMethodName(method);
    EXPECT_EQ(in.remaining(), 0u);
  }
  EXPECT_EQ(methods.size(), 4u);
}

TEST(ChunkCodecTest, RegularMinuteGridCostsUnderOneBitPerPoint) {
  std::vector<int64_t> zeros(1440, 0);
  Column c = Ints(zeros);
  size_t bytes = RoundTrip(c);
  // The header is 11 bytes; 1,440 timestamps at one bit each would be 180.
  EXPECT_LE(bytes, 16u);
  EXPECT_LE(RoundTrip(Ints(std::vector<int64_t>(100000, 0), Grid(100000))), 20u);
}

// Version 2 writes a chunk's first time from its window's start and its
// times in the largest unit dividing them: a day of minutes has a header of
// 11 bytes (version 1's was 22) and times of 3.
TEST(ChunkCodecTest, TimesAreWrittenFromTheWindowInTheirUnit) {
  std::string chunk;
  EncodeChunk(Ints(std::vector<int64_t>(1440, 7)), kWindow, &chunk);
  ASSERT_EQ(chunk[0], 2);                     // version
  EXPECT_EQ(chunk[7], 4);                     // unit: 1 min (count 1,440 is two varint bytes)
  EXPECT_EQ(chunk[8], 0);                     // first time: the window's start, less 0
  EXPECT_EQ(chunk.substr(9, 2), "\x9f\x0b");  // span: 1,439 minutes
  EXPECT_LE(chunk.size(), 16u);
  // Times a second apart, 7 ms past a second: whole seconds after the first,
  // so the unit is 1 s (the first time's offset is in ns).
  std::vector<int64_t> ts = Grid(60, 1'000'000'000);
  for (int64_t& t : ts) t += 7'000'000 + kMinute * 3;
  std::string ms;
  EncodeChunk(Ints(std::vector<int64_t>(60, 1), ts), kWindow, &ms);
  EXPECT_EQ(ms[6], 3);  // 1 s: every time is a whole second after the first
  RoundTrip(Ints(std::vector<int64_t>(60, 1), ts));
}

// A chunk of version 1 (min_ts as 8 bytes, times in ns; written before
// session 39) decodes as it did, whatever base its reader gives.
TEST(ChunkCodecTest, FirstVersionChunksStillDecode) {
  // Nanosecond times: version 2's unit is 1 ns and its body is version 1's.
  const Column in = Ints({5, 6, 7}, {kT0 + 1, kT0 + 5, kT0 + 17});
  std::string v2;
  EncodeChunk(in, kWindow, &v2);
  const std::string v1 = test::FirstVersionChunk(v2, kWindow);
  ASSERT_FALSE(v1.empty());
  ASSERT_EQ(v1[0], 1);
  EXPECT_EQ(v1.size(), v2.size() + 8 - 2);  // min_ts whole, no unit byte, a one-byte offset
  for (const int64_t base : {int64_t{0}, kWindow}) {
    Column out;
    ASSERT_TRUE(DecodeChunk(v1, base, &out).ok());
    EXPECT_EQ(out.ts, in.ts);
    EXPECT_EQ(out.ints, in.ints);
  }
}

// The exact division of storage/time_unit.h against % and / on every unit,
// offsets of 2^63 and above included.
TEST(ChunkCodecTest, ExactTimeDivisionAgreesWithDivide) {
  std::mt19937_64 rng(3);
  for (size_t u = 0; u < kTimeUnitCount; ++u) {
    const ExactTimeDivisor& by = kTimeDivisors[u];
    const auto d = static_cast<uint64_t>(kTimeUnits[u]);
    for (int i = 0; i < 20000; ++i) {
      uint64_t v = rng();
      if (i % 2 == 0) v -= v % d;  // half of them multiples
      if (i % 7 == 0) v = (UINT64_MAX / d - static_cast<uint64_t>(i)) * d;  // near the top
      ASSERT_EQ(by.Divides(v), v % d == 0) << "unit " << u << " v " << v;
      if (v % d == 0) {
        ASSERT_EQ(by.Divide(v), v / d) << "unit " << u << " v " << v;
      }
    }
  }
}

TEST(ChunkCodecTest, IrregularTimestamps) {
  std::vector<int64_t> dup = {kT0, kT0, kT0, kT0 + 1, kT0 + 1, kT0};
  RoundTrip(Ints({1, 2, 3, 4, 5, 6}, dup));
  std::vector<int64_t> decreasing = {kT0 + 5 * kMinute, kT0 + 4 * kMinute, kT0, kT0 - kMinute};
  RoundTrip(Ints({1, 2, 3, 4}, decreasing));
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  RoundTrip(Ints({1, 2, 3, 4, 5}, {lo, hi, 0, lo, hi}));
  RoundTrip(Ints({1, 2, 3}, {-1, kT0, 0}));
  std::vector<int64_t> jittered = Grid(1440);
  std::mt19937_64 rng(5);
  for (int64_t& t : jittered) t += static_cast<int64_t>(rng() % 2000000);
  jittered[700] += 1000 * kMinute;  // a large jump
  RoundTrip(Ints(std::vector<int64_t>(1440, 3), jittered));
}

TEST(ChunkCodecTest, Bools) {
  Column c;
  c.type = FieldType::kBool;
  for (int i = 0; i < 1001; ++i) c.bools.push_back((i % 7 == 0 || i > 900) ? 1 : 0);
  c.ts = Grid(c.bools.size());
  RoundTrip(c);
  c.bools.resize(3);
  c.ts.resize(3);
  RoundTrip(c);
}

TEST(ChunkCodecTest, Strings) {
  Column c;
  c.type = FieldType::kString;
  c.strings = {"",
               "",
               "running",
               "running",
               std::string("a\0b", 3),
               "ünïcödé ✓ 日本",
               "",
               "x",
               "running",
               std::string(1000, 'z'),
               std::string("\0", 1)};
  c.ts = Grid(c.strings.size());
  RoundTrip(c);
  Column many;
  many.type = FieldType::kString;
  for (int i = 0; i < 1440; ++i) many.strings.push_back(i < 700 ? "idle" : "training");
  many.ts = Grid(many.strings.size());
  EXPECT_LT(RoundTrip(many), 60u);
}

TEST(ChunkCodecTest, ZstdOnAndOff) {
  // A string chunk of long, distinct but similar strings is compressed...
  Column text;
  text.type = FieldType::kString;
  for (int i = 0; i < 200; ++i) {
    text.strings.push_back("job/" + std::to_string(i) + "/checkpoint/shard-000" +
                           std::to_string(i % 10) + "-of-00010.safetensors");
  }
  text.ts = Grid(text.strings.size());
  std::string chunk;
  EncodeChunk(text, 0, &chunk);
  EXPECT_EQ(chunk[2] & 1, 1);
  RoundTrip(text);
  // ...random integers are not.
  std::mt19937_64 rng(9);
  std::vector<int64_t> random(500);
  for (int64_t& v : random) v = static_cast<int64_t>(rng());
  chunk.clear();
  EncodeChunk(Ints(random), 0, &chunk);
  EXPECT_EQ(chunk[2] & 1, 0);
}

TEST(ChunkCodecTest, HeaderRejectsBadInput) {
  Column out;
  EXPECT_TRUE(DecodeChunk("", 0, &out).IsCorruption());
  std::string chunk;
  EncodeChunk(Ints({1, 2, 3}), 0, &chunk);
  std::string bad = chunk;
  bad[0] = 9;  // version
  EXPECT_TRUE(DecodeChunk(bad, 0, &out).IsCorruption());
  bad = chunk;
  bad[1] = 0;  // type
  EXPECT_TRUE(DecodeChunk(bad, 0, &out).IsCorruption());
  bad = chunk;
  bad[2] = 0x40;  // flags
  EXPECT_TRUE(DecodeChunk(bad, 0, &out).IsCorruption());
  // A point count above kMaxChunkPoints: varint 2^24 + 1.
  std::string huge = chunk.substr(0, 5) + std::string("\x81\x80\x80\x08", 4) + chunk.substr(6);
  EXPECT_TRUE(DecodeChunk(huge, 0, &out).IsCorruption());
  // The times' unit and span (version 2): kT0's window as base, so the
  // first time is one byte (0) at 7 and the span one byte (2 min) at 8.
  std::string windowed;
  EncodeChunk(Ints({1, 2, 3}), kWindow, &windowed);
  ASSERT_EQ(windowed.substr(6, 3), std::string("\x04\x00\x02", 3));
  bad = windowed;
  bad[6] = 8;  // a time unit past 1 d
  Status s = DecodeChunk(bad, kWindow, &out);
  EXPECT_NE(s.message().find("bad time unit 8"), std::string::npos) << s.ToString();
  std::string far = windowed.substr(0, 8);  // a span of 2^63 days: past 2^64 ns
  PutVarint64(&far, uint64_t{1} << 63);
  far[6] = 7;
  s = DecodeChunk(far + windowed.substr(9), kWindow, &out);
  EXPECT_NE(s.message().find("time span out of range"), std::string::npos) << s.ToString();
  EXPECT_TRUE(DecodeChunk(chunk + "x", 0, &out).IsCorruption());
}

std::vector<std::string> SampleChunks() {
  std::vector<Column> columns;
  std::mt19937_64 rng(11);
  std::vector<double> power, gorilla;
  std::vector<int64_t> util, counter;
  int64_t total = 1 << 30;
  for (int i = 0; i < 300; ++i) {
    power.push_back(static_cast<double>(3000 + rng() % 400) / 10.0);
    gorilla.push_back(std::sin(i) * 1e3);
    util.push_back(80 + static_cast<int64_t>(rng() % 15));
    total += static_cast<int64_t>(rng() % 5) * 123456789;
    counter.push_back(total);
  }
  columns.push_back(Floats(power));
  columns.push_back(Floats(gorilla));
  columns.push_back(Ints(util));
  columns.push_back(Ints(counter));
  columns.push_back(Ints(std::vector<int64_t>(300, 0)));
  Column s;
  s.type = FieldType::kString;
  for (int i = 0; i < 300; ++i) s.strings.push_back("state-" + std::to_string(i / 40));
  s.ts = Grid(300);
  columns.push_back(s);
  Column b;
  b.type = FieldType::kBool;
  for (int i = 0; i < 300; ++i) b.bools.push_back(rng() % 2);
  b.ts = Grid(300);
  columns.push_back(b);
  std::vector<std::string> chunks;
  for (const Column& c : columns) {
    chunks.emplace_back();
    EncodeChunk(c, 0, &chunks.back());
  }
  // Also every integer method on its own, through the chunk format.
  for (const std::vector<int64_t>& v :
       {std::vector<int64_t>{5, 9, 2, 7, 1, 8, 3}, std::vector<int64_t>(40, 3)}) {
    chunks.emplace_back();
    EncodeChunk(Ints(v), 0, &chunks.back());
  }
  return chunks;
}

// Truncation at every length must fail cleanly (ASan/UBSan watch the reads).
TEST(ChunkCodecTest, TruncatedChunksAreCorruption) {
  for (const std::string& chunk : SampleChunks()) {
    Column out;
    ASSERT_TRUE(DecodeChunk(chunk, 0, &out).ok());
    for (size_t len = 0; len < chunk.size(); ++len) {
      EXPECT_FALSE(DecodeChunk(std::string_view(chunk).substr(0, len), 0, &out).ok())
          << "length " << len << " of " << chunk.size();
    }
  }
}

// Flipped bytes may decode to other values (there is no checksum at this
// level; the block around the chunk has one) but must never crash.
TEST(ChunkCodecTest, FlippedBytesNeverCrash) {
  std::mt19937_64 rng(13);
  size_t decoded = 0, rejected = 0;
  for (const std::string& chunk : SampleChunks()) {
    for (int trial = 0; trial < 400; ++trial) {
      std::string bad = chunk;
      int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      Column out;
      if (DecodeChunk(bad, 0, &out).ok()) {
        ++decoded;
        EXPECT_EQ(out.size(), [&] {
          ChunkInfo info;
          EXPECT_TRUE(ReadChunkInfo(bad, 0, &info).ok());
          return size_t{info.count};
        }());
      } else {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(decoded + rejected, 0u);
}

TEST(ChunkCodecTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string junk(1 + rng() % 64, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    junk[0] = 1;                                 // valid version, to get past it
    junk[1] = static_cast<char>(1 + rng() % 5);  // valid type
    junk[2] = static_cast<char>(rng() % 2);
    Column out;
    (void)DecodeChunk(junk, 0, &out);
  }
}

}  // namespace
}  // namespace gpulse::storage
