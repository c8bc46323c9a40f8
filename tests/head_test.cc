// The head's block chains against a plain column that does the same
// operations the simple way (append, replace, sort and de-duplicate, erase).
#include "engine/head.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "engine/column_ops.h"

namespace gpulse::engine {
namespace {

// What a column of the head must hold: its points in arrival order, the
// last replaced in place when its timestamp comes again.
struct Model {
  Column points;

  void Append(int64_t ts, const FieldValueRef& value) {
    if (!points.ts.empty() && points.ts.back() == ts) {
      ReplaceLastValue(&points, value);
      return;
    }
    AppendValue(&points, ts, value);
  }
  Column Range(int64_t start, int64_t end) const {
    Column copy = points;
    SortAndDedup(&copy);
    Column out;
    out.type = points.type;
    AppendRange(copy, start, end, &out);
    return out;
  }
};

// Doubles by their bits: NaN and -0.0 must come back as they went in.
std::vector<uint64_t> Bits(const std::vector<double>& values) {
  std::vector<uint64_t> out;
  for (double v : values) out.push_back(std::bit_cast<uint64_t>(v));
  return out;
}

void ExpectSame(const Column& want, const Column& got, const std::string& where) {
  ASSERT_EQ(want.type, got.type) << where;
  EXPECT_EQ(want.ts, got.ts) << where;
  EXPECT_EQ(Bits(want.floats), Bits(got.floats)) << where;
  EXPECT_EQ(want.ints, got.ints) << where;
  EXPECT_EQ(want.uints, got.uints) << where;
  EXPECT_EQ(want.bools, got.bools) << where;
  EXPECT_EQ(want.strings, got.strings) << where;
}

// A value of `type` drawn from `rng`: mostly a gauge's small steps, at
// times the type's extremes; strings sometimes past the inline buffer of
// std::string.
FieldValueRef RandomValue(FieldType type, std::mt19937_64& rng, std::vector<std::string>* texts) {
  if (rng() % 16 == 0) {
    switch (type) {
      case FieldType::kFloat: {
        constexpr double kOdd[] = {std::numeric_limits<double>::quiet_NaN(), -0.0,
                                   std::numeric_limits<double>::infinity(), -1e308, 5e-324};
        return kOdd[rng() % 5];
      }
      case FieldType::kInt:
        return rng() % 2 ? INT64_MIN : INT64_MAX;
      case FieldType::kUint:
        return rng() % 2 ? uint64_t{0} : UINT64_MAX;
      default:
        break;
    }
  }
  switch (type) {
    case FieldType::kFloat:
      return static_cast<double>(rng() % 1000) / 8.0 - 40.0;
    case FieldType::kInt:
      return static_cast<int64_t>(rng()) >> (rng() % 64);
    case FieldType::kUint:
      return static_cast<uint64_t>(rng());
    case FieldType::kBool:
      return rng() % 2 == 0;
    case FieldType::kString:
      texts->push_back(std::string(rng() % 40, static_cast<char>('a' + rng() % 26)));
      return std::string_view(texts->back());
  }
  return 0.0;
}

TEST(HeadTest, RandomAppendsReplacesAndErasesReadAsThePlainColumnDoes) {
  constexpr FieldType kTypes[] = {FieldType::kFloat, FieldType::kInt, FieldType::kUint,
                                  FieldType::kBool, FieldType::kString};
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    Head head;
    // Three series of the five types' fields, written in a fleet's order.
    std::vector<Model> models(15);
    for (size_t i = 0; i < models.size(); ++i) models[i].points.type = kTypes[i % 5];
    std::vector<std::string> texts;
    texts.reserve(100000);  // the views handed to Append stay valid
    int64_t clock = 1'000;
    const int steps = 200 + static_cast<int>(rng() % 800);
    for (int step = 0; step < steps; ++step) {
      const uint32_t series = static_cast<uint32_t>(rng() % 3);
      const uint64_t dice = rng() % 100;
      if (dice < 3) {
        const int64_t first = static_cast<int64_t>(rng() % static_cast<uint64_t>(clock + 1));
        const int64_t last = first + static_cast<int64_t>(rng() % 200);
        head.Erase(series, first, last);
        for (size_t f = 0; f < 5; ++f) {
          Model& m = models[series * 5 + f];
          EraseRange(&m.points, first, last);
        }
        continue;
      }
      // Mostly the next minute; sometimes the same time again or a late one.
      int64_t ts = clock;
      if (dice < 85) {
        ts = clock += 60;
      } else if (dice < 95) {
        ts = clock - 60 * static_cast<int64_t>(rng() % 20);
      } else if (dice == 95) {
        ts = INT64_MIN + static_cast<int64_t>(rng() % 100);  // a step of 64 bits
      }
      for (uint32_t f = 0; f < 5; ++f) {
        if (rng() % 10 == 0) continue;  // a point without this field
        Model& m = models[series * 5 + f];
        const FieldValueRef value = RandomValue(m.points.type, rng, &texts);
        head.Append(series, f, m.points.type, ts, value, f);
        m.Append(ts, value);
      }
    }
    const auto check = [&](const std::string& when) {
      uint64_t values = 0;
      for (uint32_t series = 0; series < 3; ++series) {
        for (uint32_t f = 0; f < 5; ++f) {
          const Model& m = models[series * 5 + f];
          values += m.points.ts.size();
          for (int probe = 0; probe < 6; ++probe) {
            int64_t start = static_cast<int64_t>(rng() % static_cast<uint64_t>(clock + 120));
            int64_t end = start + static_cast<int64_t>(rng() % 3000);
            if (probe == 0) start = INT64_MIN, end = INT64_MAX;
            Column got;
            got.type = m.points.type;
            head.CopyRange(series, f, start, end, &got);
            ExpectSame(m.Range(start, end), got,
                       when + " seed " + std::to_string(seed) + " series " +
                           std::to_string(series) + " field " + std::to_string(f) + " [" +
                           std::to_string(start) + ", " + std::to_string(end) + ")");
          }
        }
      }
      return values;
    };
    EXPECT_EQ(head.values(), check("live"));
    // As the flush reads them: every column whole, sorted where it is not.
    head.ForEach([&](const Head::Entry& entry) {
      const Model& m = models[entry.series_id * 5 + entry.field_id];
      Column got;
      got.type = entry.type;
      head.AppendColumn(entry, &got);
      if (entry.sorted) {
        // What the flush writes without sorting must be in order already.
        EXPECT_TRUE(std::adjacent_find(got.ts.begin(), got.ts.end(), std::greater_equal<>()) ==
                    got.ts.end())
            << "seed " << seed;
      } else {
        SortAndDedup(&got);
      }
      ExpectSame(m.Range(INT64_MIN, INT64_MAX), got, "whole column, seed " + std::to_string(seed));
    });
  }
}

TEST(HeadTest, ARangeCutsAnywhereInTheChainOfBlocks) {
  Head head;
  for (int64_t t = 0; t < 1000; ++t) head.Append(7, 3, FieldType::kInt, t * 10, t);
  for (int64_t start = -5; start < 10'010; start += 37) {
    for (int64_t end : {start, start + 1, start + 10, start + 640, start + 5000}) {
      Column got;
      got.type = FieldType::kInt;
      head.CopyRange(7, 3, start, end, &got);
      const int64_t first = std::clamp<int64_t>((start + 9) / 10, 0, 1000);
      const int64_t last = std::clamp<int64_t>((end + 9) / 10, 0, 1000);  // exclusive
      ASSERT_EQ(static_cast<int64_t>(got.ts.size()), std::max<int64_t>(0, last - first))
          << start << ".." << end;
      for (size_t i = 0; i < got.ts.size(); ++i) {
        ASSERT_EQ(got.ints[i], first + static_cast<int64_t>(i));
        ASSERT_EQ(got.ts[i], got.ints[i] * 10);
      }
    }
  }
  Column none;
  none.type = FieldType::kInt;
  head.CopyRange(7, 4, INT64_MIN, INT64_MAX, &none);   // no such field
  head.CopyRange(99, 3, INT64_MIN, INT64_MAX, &none);  // no such series
  EXPECT_TRUE(none.ts.empty());
}

// A fleet, minute by minute: `series` series x 10 fields x `minutes` points.
template <typename ValueOf>
std::unique_ptr<Head> FleetHead(uint32_t series, ValueOf&& value_of, int64_t minutes = 600) {
  auto head = std::make_unique<Head>();
  for (int64_t minute = 0; minute < minutes; ++minute) {
    for (uint32_t s = 0; s < series; ++s) {
      for (uint32_t field = 0; field < 10; ++field) {
        head->Append(s, field, FieldType::kInt, minute * 60'000'000'000, value_of(minute, s, field),
                     field);
      }
    }
  }
  return head;
}

TEST(HeadTest, MemoryIsChargedForWhatIsTakenAndAFewPointsTakeLittle) {
  Head small;
  small.Append(0, 0, FieldType::kFloat, 1, 1.5);
  EXPECT_GT(small.bytes(), 0u);
  EXPECT_LE(small.bytes(), 8u << 10);  // a first slab of a few KiB

  constexpr uint64_t kValues = 64 * 10 * 600;
  // Gauges of 7 bits at a steady step: about 1.8 bytes a value packed, plus
  // the open runs and entries, where slots alone take 16.
  const auto gauges = FleetHead(64, [](int64_t minute, uint32_t s, uint32_t field) -> int64_t {
    return (minute * 7 + s * 13 + field) % 101;
  });
  EXPECT_EQ(gauges->values(), kValues);
  EXPECT_GE(gauges->bytes(), kValues);
  EXPECT_LE(gauges->bytes(), kValues * 9 / 2);

  // Random 64-bit values cannot pack: still no more than the slots take.
  std::mt19937_64 rng(7);
  const auto noise = FleetHead(
      64, [&](int64_t, uint32_t, uint32_t) -> int64_t { return static_cast<int64_t>(rng()); });
  EXPECT_EQ(noise->values(), kValues);
  EXPECT_GE(noise->bytes(), kValues * 8);
  EXPECT_LE(noise->bytes(), kValues * 16);

  // A wide fleet's hour: 20,000 columns of 60 minutes each, none packed
  // yet. The open runs take a bit a timestamp and a few a gauge's change,
  // so a column costs its entry (72 bytes), its run's header (48) and a
  // 64-byte buffer (slots took 1 KiB a column, and at a million
  // series-fields the default head flushed after a point or two a column).
  // The 88 bytes of the first run it outgrew are freed, not kept: they
  // were charged until the flush.
  constexpr uint32_t kWideSeries = 2000;
  const auto hour = FleetHead(
      kWideSeries,
      [](int64_t minute, uint32_t s, uint32_t field) -> int64_t {
        return 40 + (minute * 7 + s * 13 + field) % 11;
      },
      60);
  EXPECT_EQ(hour->values(), uint64_t{kWideSeries} * 10 * 60);
  EXPECT_LE(hour->bytes(), uint64_t{kWideSeries} * 10 * 200);
  Column column;
  column.type = FieldType::kInt;
  hour->CopyRange(kWideSeries - 1, 9, INT64_MIN, INT64_MAX, &column);
  ASSERT_EQ(column.ts.size(), 60u);
  EXPECT_EQ(column.ints[59], 40 + (59 * 7 + (kWideSeries - 1) * 13 + 9) % 11);

  // Long strings are charged for their text as well.
  Head text;
  const std::string long_text(1000, 'x');
  text.Append(0, 0, FieldType::kString, 1, std::string_view(long_text));
  EXPECT_GE(text.bytes(), 1000u);
}

// The heap a head takes for a wide fleet's first points: told how many
// fields a point has, a series' first column makes room for that many, where
// growing one by one gave a ten-field series room for sixteen. Measured with
// glibc's allocator statistics (a sanitizer's allocator keeps none: skipped).
TEST(HeadTest, ASeriesTakesRoomForItsPointsFieldsOnly) {
  constexpr uint32_t kSeries = 20000, kFields = 10;
  const auto heap_of = [&](size_t fields_hint) -> double {
    // In use: the arena's blocks and the ones mapped on their own (slabs).
    const auto in_use = [] {
      const struct mallinfo2 m = mallinfo2();
      return m.uordblks + m.hblkhd;
    };
    const size_t before = in_use();
    auto head = std::make_unique<Head>();
    for (int64_t minute = 0; minute < 2; ++minute) {
      for (uint32_t s = 0; s < kSeries; ++s) {
        for (uint32_t field = 0; field < kFields; ++field) {
          head->Append(s, field, FieldType::kInt, minute * 60'000'000'000, int64_t{40 + field},
                       field, fields_hint);
        }
      }
    }
    const size_t after = in_use();
    return static_cast<double>(after - before) / (kSeries * kFields);
  };
  const double one_by_one = heap_of(0);
  if (one_by_one <= 0) GTEST_SKIP() << "no allocator statistics (a sanitizer's allocator)";
  const double told = heap_of(kFields);
  // Six spare 48-byte entries for each ten columns: about 29 bytes a column.
  EXPECT_LE(told, one_by_one - 25) << told << " against " << one_by_one << " bytes a column";
  EXPECT_LE(told, 160) << "bytes a column";
}

TEST(HeadTest, ASensorsDecimalsTakeAFewBitsAndAnOddDoubleKeepsEveryBit) {
  // Watts printed with one decimal: the open run codes them as integers of
  // tenths, a dozen bits a point where their XOR takes about 45 (the hour
  // then took 700 bytes a column). A double with no such form (a third,
  // NaN, -0.0) turns the run to XOR, and every value reads back bit for bit
  // either way.
  const auto watts = [](uint32_t s, int64_t minute) {
    return static_cast<double>(3000 + (minute * 37 + s * 11) % 400) / 10.0;
  };
  Head head;
  constexpr uint32_t kSeries = 10'000;  // the last slab's free room is noise
  for (int64_t minute = 0; minute < 60; ++minute) {
    for (uint32_t s = 0; s < kSeries; ++s) {
      double v = watts(s, minute);
      if (s == 1 && minute == 30) v = 1.0 / 3.0;
      if (s == 2 && minute == 40) v = std::numeric_limits<double>::quiet_NaN();
      if (s == 3 && minute == 50) v = -0.0;
      head.Append(s, 0, FieldType::kFloat, minute * 60'000'000'000, v);
    }
  }
  EXPECT_LE(head.bytes(), uint64_t{kSeries} * 400);
  for (uint32_t s = 0; s < 5; ++s) {
    Column got;
    got.type = FieldType::kFloat;
    head.CopyRange(s, 0, INT64_MIN, INT64_MAX, &got);
    ASSERT_EQ(got.ts.size(), 60u);
    for (int64_t minute = 0; minute < 60; ++minute) {
      double want = watts(s, minute);
      if (s == 1 && minute == 30) want = 1.0 / 3.0;
      if (s == 2 && minute == 40) want = std::numeric_limits<double>::quiet_NaN();
      if (s == 3 && minute == 50) want = -0.0;
      EXPECT_EQ(std::bit_cast<uint64_t>(got.floats[minute]), std::bit_cast<uint64_t>(want))
          << "series " << s << " minute " << minute;
    }
  }
}

TEST(HeadTest, TheSameTimeAgainReplacesTheValueOfEveryType) {
  Head head;
  const std::string first(30, 'a'), second = "b";
  head.Append(0, 0, FieldType::kString, 5, std::string_view(first));
  head.Append(0, 0, FieldType::kString, 5, std::string_view(second));
  head.Append(0, 1, FieldType::kBool, 5, true);
  head.Append(0, 1, FieldType::kBool, 5, false);
  head.Append(0, 2, FieldType::kFloat, 5, -0.0);
  head.Append(0, 2, FieldType::kFloat, 5, 2.25);
  EXPECT_EQ(head.values(), 3u);
  Column s, b, f;
  s.type = FieldType::kString;
  b.type = FieldType::kBool;
  f.type = FieldType::kFloat;
  head.CopyRange(0, 0, 0, 10, &s);
  head.CopyRange(0, 1, 0, 10, &b);
  head.CopyRange(0, 2, 0, 10, &f);
  EXPECT_EQ(s.strings, std::vector<std::string>{"b"});
  EXPECT_EQ(b.bools, std::vector<uint8_t>{0});
  EXPECT_EQ(f.floats, std::vector<double>{2.25});
}

TEST(HeadTest, AnUnsortedColumnReadsEveryRangeEdgeExactly) {
  // Two writers' batches landing swapped: minutes 100..199, then 0..99, then
  // 200..299, so packed blocks overlap in time and each range edge falls on
  // some block's first or last point.
  Head head;
  for (int64_t block : {1, 0, 2}) {
    for (int64_t m = block * 100; m < block * 100 + 100; ++m) {
      head.Append(0, 0, FieldType::kInt, m * 60, m);
    }
  }
  for (int64_t m = 0; m < 300; ++m) {
    Column one, rest;
    one.type = rest.type = FieldType::kInt;
    head.CopyRange(0, 0, m * 60, m * 60 + 1, &one);
    ASSERT_EQ(one.ints, std::vector<int64_t>{m}) << "minute " << m;
    head.CopyRange(0, 0, m * 60, INT64_MAX, &rest);
    ASSERT_EQ(rest.ts.size(), static_cast<size_t>(300 - m)) << "minute " << m;
    ASSERT_EQ(rest.ints.front(), m);
  }
}

TEST(HeadTest, AnErasedColumnTakesNewPointsAgain) {
  Head head;
  for (int64_t t = 1; t <= 300; ++t) head.Append(0, 0, FieldType::kUint, t, uint64_t(t));
  head.Erase(0, 0, 1000);
  EXPECT_EQ(head.values(), 0u);
  head.Append(0, 0, FieldType::kUint, 50, uint64_t{500});
  head.Append(0, 0, FieldType::kUint, 40, uint64_t{400});  // earlier: sorted on reading
  Column got;
  got.type = FieldType::kUint;
  head.CopyRange(0, 0, INT64_MIN, INT64_MAX, &got);
  EXPECT_EQ(got.ts, (std::vector<int64_t>{40, 50}));
  EXPECT_EQ(got.uints, (std::vector<uint64_t>{400, 500}));
}

}  // namespace
}  // namespace gpulse::engine
