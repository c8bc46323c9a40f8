// Tests for the tallies, the tier rows of string fields (storage/tally.h):
// BuildTallies against rows counted point by point, the top-kTallyTop cut and
// its order, CoarsenTallies and MergeIntoLastTallyRow against building
// directly, the tally block's round trip, and its handling of malformed,
// truncated and corrupted bytes.
#include "storage/tally.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/coding.h"
#include "storage/column.h"
#include "storage/rollup.h"

#include "tests/support/tier_codec.h"

namespace gpulse::storage {
namespace {

using namespace gpulse::test;  // tests/support/tier_codec.h

constexpr int64_t kAfterMinWindow = -30'744'573 * k5m;  // the first unclamped 5m window
constexpr int64_t kLastWindow = 30'744'573 * k5m;       // the 5m window holding INT64_MAX

// ---------------------------------------------------------------------------
// Helpers

Column MakeStrings(std::vector<int64_t> ts, std::vector<std::string> v) {
  Column c;
  c.type = FieldType::kString;
  c.ts = std::move(ts);
  c.strings = std::move(v);
  return c;
}

using Counts = std::vector<std::pair<std::string, uint64_t>>;

// Appends a row with the given (value, count) pairs, in the order given.
void PushRow(TallyColumn* t, int64_t bucket, int64_t first_ts, int64_t last_ts, uint64_t count,
             uint64_t other, const Counts& values) {
  t->bucket.push_back(bucket);
  t->first_ts.push_back(first_ts);
  t->last_ts.push_back(last_ts);
  t->count.push_back(count);
  t->other.push_back(other);
  for (const auto& [v, c] : values) {
    t->values.push_back(v);
    t->value_count.push_back(c);
  }
  t->begin.push_back(static_cast<uint32_t>(t->values.size()));
}

// Rows for points [begin, end) of `raw`, counted point by point: each
// point's bucket is its own window (ExpectedBucket).
TallyColumn ReferenceTallies(const Column& raw, size_t begin, size_t end, int64_t width) {
  TallyColumn want;
  for (size_t i = begin; i < end;) {
    const int64_t b = ExpectedBucket(raw.ts[i], width);
    std::map<std::string, uint64_t> counts;
    size_t j = i;
    for (; j < end && ExpectedBucket(raw.ts[j], width) == b; ++j) ++counts[raw.strings[j]];
    // By value, then stably by count: ties keep the smaller value first.
    Counts sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    uint64_t other = 0;
    while (sorted.size() > kTallyTop) {
      other += sorted.back().second;
      sorted.pop_back();
    }
    PushRow(&want, b, raw.ts[i], raw.ts[j - 1], j - i, other, sorted);
    i = j;
  }
  return want;
}

void ExpectSameTallies(const TallyColumn& got, const TallyColumn& want) {
  EXPECT_EQ(got.bucket, want.bucket);
  EXPECT_EQ(got.first_ts, want.first_ts);
  EXPECT_EQ(got.last_ts, want.last_ts);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.other, want.other);
  EXPECT_EQ(got.begin, want.begin);
  EXPECT_EQ(got.values, want.values);
  EXPECT_EQ(got.value_count, want.value_count);
}

// The invariants every well-formed TallyColumn keeps.
void ExpectWellFormed(const TallyColumn& t) {
  const size_t n = t.bucket.size();
  ASSERT_EQ(t.first_ts.size(), n);
  ASSERT_EQ(t.last_ts.size(), n);
  ASSERT_EQ(t.count.size(), n);
  ASSERT_EQ(t.other.size(), n);
  ASSERT_EQ(t.begin.size(), n + 1);
  ASSERT_EQ(t.begin.front(), 0u);
  ASSERT_EQ(t.begin.back(), t.values.size());
  ASSERT_EQ(t.value_count.size(), t.values.size());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_LE(t.begin[i], t.begin[i + 1]) << "row " << i;
    EXPECT_LE(t.begin[i + 1] - t.begin[i], kTallyTop) << "row " << i;
    EXPECT_LE(t.first_ts[i], t.last_ts[i]) << "row " << i;
    if (i > 0) {
      EXPECT_LT(t.bucket[i - 1], t.bucket[i]) << "row " << i;
    }
    uint64_t sum = t.other[i];
    for (size_t k = t.begin[i]; k < t.begin[i + 1]; ++k) sum += t.value_count[k];
    EXPECT_EQ(sum, t.count[i]) << "row " << i;
  }
}

// Row i's (value, count) pairs.
Counts RowValues(const TallyColumn& t, size_t i) {
  Counts out;
  for (size_t k = t.begin[i]; k < t.begin[i + 1]; ++k) {
    out.emplace_back(t.values[k], t.value_count[k]);
  }
  return out;
}

// Values for `ts` drawn from `vocabulary`, the first ones more often.
Column RandomStrings(std::mt19937_64& rng, std::vector<int64_t> ts,
                     const std::vector<std::string>& vocabulary) {
  std::vector<std::string> v(ts.size());
  const size_t n = vocabulary.size();
  for (std::string& s : v) s = vocabulary[std::min(rng() % n, rng() % n)];
  return MakeStrings(std::move(ts), std::move(v));
}

std::vector<std::string> Jobs(size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.push_back("job-" + std::to_string(i));
  return v;
}

TallyColumn Build(const Column& raw, size_t begin, size_t end, int64_t width) {
  TallyColumn t;
  BuildTallies(raw, begin, end, width, &t);
  return t;
}

TallyColumn Coarsen(const TallyColumn& fine, int64_t width) {
  TallyColumn t;
  CoarsenTallies(fine, width, &t);
  return t;
}

std::string Encoded(const TallyColumn& rows) {
  std::string out;
  EncodeTallies(rows, &out);
  return out;
}

// Some stale rows, which DecodeTallies must replace.
TallyColumn Stale() {
  TallyColumn t;
  PushRow(&t, 5, 5, 6, 3, 1, {{"stale", 2}});
  return t;
}

// ---------------------------------------------------------------------------
// BuildTallies

TEST(TallyTest, ResetLeavesNoRowsAndOneBegin) {
  TallyColumn t = Stale();
  t.Reset();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.values.empty());
  EXPECT_TRUE(t.value_count.empty());
  EXPECT_EQ(t.begin, (std::vector<uint32_t>{0}));
  ExpectWellFormed(t);
}

TEST(TallyTest, BuildTalliesKeepsTheEightMostFrequentValuesAndSumsTheRestIntoOther) {
  // Bucket 0: 30 points, 10 s apart, of ten values (ties broken by value):
  // a 6, b 5, c 4, d 3, e 3, f 2, g 2, h 2, i 2, z 1.
  const Counts bucket0 = {{"a", 6}, {"b", 5}, {"c", 4}, {"e", 3}, {"d", 3},
                          {"i", 2}, {"h", 2}, {"g", 2}, {"f", 2}, {"z", 1}};
  std::vector<std::string> values;
  for (const auto& [v, c] : bucket0) {
    for (uint64_t k = 0; k < c; ++k) values.push_back(v);
  }
  std::mt19937_64 rng(1);
  std::shuffle(values.begin(), values.end(), rng);
  std::vector<int64_t> ts;
  for (int k = 0; k < 30; ++k) ts.push_back(kT0 + k * 10 * kSecond);
  // Bucket 1 is empty; bucket 2 holds x, y, x; bucket 3 one empty string.
  for (int64_t t :
       {kT0 + 2 * k5m + 7 * kSecond, kT0 + 2 * k5m + 100 * kSecond, kT0 + 3 * k5m - 1}) {
    ts.push_back(t);
  }
  for (const char* v : {"x", "y", "x"}) values.push_back(v);
  ts.push_back(kT0 + 3 * k5m);
  values.push_back("");
  const Column raw = MakeStrings(ts, values);

  const TallyColumn rows = Build(raw, 0, raw.size(), k5m);
  ExpectWellFormed(rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.bucket, (std::vector<int64_t>{kT0, kT0 + 2 * k5m, kT0 + 3 * k5m}));
  EXPECT_EQ(rows.first_ts, (std::vector<int64_t>{kT0, kT0 + 2 * k5m + 7 * kSecond, kT0 + 3 * k5m}));
  EXPECT_EQ(rows.last_ts,
            (std::vector<int64_t>{kT0 + 290 * kSecond, kT0 + 3 * k5m - 1, kT0 + 3 * k5m}));
  EXPECT_EQ(rows.count, (std::vector<uint64_t>{30, 3, 1}));
  EXPECT_EQ(rows.other, (std::vector<uint64_t>{3, 0, 0}));  // i 2 and z 1
  EXPECT_EQ(rows.begin, (std::vector<uint32_t>{0, 8, 10, 11}));
  EXPECT_EQ(
      RowValues(rows, 0),
      (Counts{{"a", 6}, {"b", 5}, {"c", 4}, {"d", 3}, {"e", 3}, {"f", 2}, {"g", 2}, {"h", 2}}));
  EXPECT_EQ(RowValues(rows, 1), (Counts{{"x", 2}, {"y", 1}}));
  EXPECT_EQ(RowValues(rows, 2), (Counts{{"", 1}}));
  ExpectSameTallies(rows, ReferenceTallies(raw, 0, raw.size(), k5m));
}

TEST(TallyTest, BuildTalliesMatchesCountingPointByPoint) {
  std::mt19937_64 rng(2);
  const std::vector<int64_t> ts = MinutePoints(kT0 + 13 * kMinute + 11 * kSecond, 3000, [](int i) {
    return i % 7 == 3 || (i >= 600 && i < 900);
  });
  const Column raw = RandomStrings(rng, ts, Jobs(14));
  for (int64_t width : {k5m, k1h, k1d}) {
    SCOPED_TRACE(testing::Message() << "width " << width);
    const TallyColumn rows = Build(raw, 0, raw.size(), width);
    ExpectWellFormed(rows);
    ExpectSameTallies(rows, ReferenceTallies(raw, 0, raw.size(), width));
  }
  // Some hourly rows have more than kTallyTop values: the cut is exercised.
  const TallyColumn hourly = Build(raw, 0, raw.size(), k1h);
  EXPECT_TRUE(
      std::any_of(hourly.other.begin(), hourly.other.end(), [](uint64_t o) { return o > 0; }));
}

TEST(TallyTest, BuildTalliesAppendsRowsForOnlyTheGivenRange) {
  const std::vector<int64_t> ts = MinutePoints(kT0, 120, [](int) { return false; });
  std::mt19937_64 rng(3);
  const Column raw = RandomStrings(rng, ts, Jobs(4));
  TallyColumn rows = Stale();
  rows.Reset();
  BuildTallies(raw, 0, 30, k5m, &rows);  // minutes 0-29: 6 whole buckets
  ASSERT_EQ(rows.size(), 6u);
  BuildTallies(raw, 47, 93, k5m, &rows);  // minutes 47-92: 45m-90m, partial at both ends
  TallyColumn want = ReferenceTallies(raw, 0, 30, k5m);
  const TallyColumn tail = ReferenceTallies(raw, 47, 93, k5m);
  for (size_t j = 0; j < tail.size(); ++j) AppendTallyRow(tail, j, &want);
  ExpectSameTallies(rows, want);
  ASSERT_EQ(rows.size(), 6u + 10u);
  EXPECT_EQ(rows.count[6], 3u);  // minutes 47-49
  EXPECT_EQ(rows.first_ts[6], kT0 + 47 * kMinute);
  EXPECT_EQ(rows.count.back(), 3u);  // minutes 90-92
  EXPECT_EQ(rows.last_ts.back(), kT0 + 92 * kMinute);
}

TEST(TallyTest, BuildTalliesHandlesTheWindowsAtBothEndsOfTheInt64Range) {
  ASSERT_EQ(ExpectedBucket(kI64Min, k5m), kI64Min);
  ASSERT_EQ(ExpectedBucket(kI64Max, k5m), kLastWindow);
  const Column raw = MakeStrings({kI64Min, kI64Min + 1, kAfterMinWindow, kAfterMinWindow + 9, -1, 0,
                                  kLastWindow - 1, kLastWindow, kI64Max - 1, kI64Max},
                                 {"a", "b", "c", "c", "d", "e", "f", "g", "g", "h"});
  const TallyColumn rows = Build(raw, 0, raw.size(), k5m);
  ExpectWellFormed(rows);
  ExpectSameTallies(rows, ReferenceTallies(raw, 0, raw.size(), k5m));
  EXPECT_EQ(rows.bucket, (std::vector<int64_t>{kI64Min, kAfterMinWindow, -k5m, 0, kLastWindow - k5m,
                                               kLastWindow}));
  EXPECT_EQ(rows.count, (std::vector<uint64_t>{2, 2, 1, 1, 1, 3}));
  EXPECT_EQ(RowValues(rows, 5), (Counts{{"g", 2}, {"h", 1}}));
}

TEST(TallyTest, AppendTallyRowCopiesOneRow) {
  std::mt19937_64 rng(4);
  const Column raw =
      RandomStrings(rng, MinutePoints(kT0, 600, [](int) { return false; }), Jobs(12));
  const TallyColumn rows = Build(raw, 0, raw.size(), k1h);
  ASSERT_EQ(rows.size(), 10u);
  TallyColumn copy;
  for (size_t j = 0; j < rows.size(); ++j) AppendTallyRow(rows, j, &copy);
  ExpectSameTallies(copy, rows);
  TallyColumn one;
  AppendTallyRow(rows, 7, &one);
  ExpectWellFormed(one);
  EXPECT_EQ(one.bucket, (std::vector<int64_t>{rows.bucket[7]}));
  EXPECT_EQ(one.count, (std::vector<uint64_t>{rows.count[7]}));
  EXPECT_EQ(one.other, (std::vector<uint64_t>{rows.other[7]}));
  EXPECT_EQ(RowValues(one, 0), RowValues(rows, 7));
}

// ---------------------------------------------------------------------------
// MergeIntoLastTallyRow and CoarsenTallies

TEST(TallyTest, MergingTheTwoHalvesOfABucketEqualsBuildingTheWhole) {
  // Two hours of minute points. The second hour has nine values: job-0
  // only at its first point, job-8 only at its last, job-1..job-7 between.
  // So each part of a split has at most kTallyTop values (nothing is cut
  // before the merge) and the whole has nine (the merge cuts job-8).
  const std::vector<int64_t> ts = MinutePoints(kT0, 120, [](int i) { return i % 9 == 4; });
  std::mt19937_64 rng(5);
  Column raw = RandomStrings(rng, ts, Jobs(3));
  const size_t hour = static_cast<size_t>(
      std::find_if(ts.begin(), ts.end(), [](int64_t t) { return t >= kT0 + k1h; }) - ts.begin());
  const std::vector<std::string> jobs = Jobs(9);
  for (size_t s = hour; s < raw.size(); ++s) raw.strings[s] = jobs[1 + (s * 5) % 7];
  raw.strings[hour] = jobs[0];
  raw.strings.back() = jobs[8];
  const TallyColumn whole = Build(raw, 0, raw.size(), k1h);
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_EQ(whole.other[1], 1u);
  ASSERT_EQ(whole.begin[2] - whole.begin[1], kTallyTop);
  EXPECT_EQ(whole.values.back(), "job-0");
  for (size_t split = hour + 1; split < raw.size(); split += 5) {
    SCOPED_TRACE(testing::Message() << "split at " << split);
    // The later half into the earlier (with a row before it).
    TallyColumn into = Build(raw, 0, split, k1h);
    const TallyColumn later = Build(raw, split, raw.size(), k1h);
    ASSERT_EQ(into.size(), 2u);
    ASSERT_EQ(later.size(), 1u);
    MergeIntoLastTallyRow(later, 0, &into);
    ExpectWellFormed(into);
    ExpectSameTallies(into, whole);
    // The earlier half into the later.
    const TallyColumn earlier = Build(raw, hour, split, k1h);
    TallyColumn last = Build(raw, 0, hour, k1h);
    AppendTallyRow(later, 0, &last);
    MergeIntoLastTallyRow(earlier, 0, &last);
    ExpectSameTallies(last, whole);
  }
}

TEST(TallyTest, MergingAddsTheCountsOfEqualValuesAndTheirOthers) {
  TallyColumn into;
  PushRow(&into, 0, 10, 20, 5, 0, {{"a", 4}, {"b", 1}});
  PushRow(&into, k1h, k1h + 30, k1h + 40, 12, 2,
          {{"x", 3}, {"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 1}, {"g", 1}});
  TallyColumn from;
  PushRow(&from, k1h, k1h + 5, k1h + 35, 7, 1, {{"h", 2}, {"a", 2}, {"y", 1}, {"b", 1}});
  MergeIntoLastTallyRow(from, 0, &into);
  ExpectWellFormed(into);
  EXPECT_EQ(into.bucket, (std::vector<int64_t>{0, k1h}));
  EXPECT_EQ(into.first_ts, (std::vector<int64_t>{10, k1h + 5}));
  EXPECT_EQ(into.last_ts, (std::vector<int64_t>{20, k1h + 40}));
  EXPECT_EQ(into.count, (std::vector<uint64_t>{5, 19}));
  // 2 + 1 from the others, then g and y (1 each) cut.
  EXPECT_EQ(into.other, (std::vector<uint64_t>{0, 5}));
  EXPECT_EQ(RowValues(into, 0), (Counts{{"a", 4}, {"b", 1}}));
  EXPECT_EQ(
      RowValues(into, 1),
      (Counts{{"a", 3}, {"x", 3}, {"b", 2}, {"h", 2}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 1}}));
}

void ExpectCoarseningEqualsBuildingDirectly(const Column& raw) {
  const TallyColumn m5 = Build(raw, 0, raw.size(), k5m);
  const TallyColumn h1 = Build(raw, 0, raw.size(), k1h);
  const TallyColumn d1 = Build(raw, 0, raw.size(), k1d);
  // Not vacuous: coarse rows merge several fine ones.
  ASSERT_GT(m5.size(), h1.size() * 3);
  ASSERT_GT(h1.size(), d1.size() * 3);
  ASSERT_GE(d1.size(), 3u);
  {
    SCOPED_TRACE("5m to 1h");
    ExpectSameTallies(Coarsen(m5, k1h), h1);
  }
  {
    SCOPED_TRACE("1h to 1d");
    ExpectSameTallies(Coarsen(h1, k1d), d1);
  }
  {
    SCOPED_TRACE("5m to 1h to 1d");
    ExpectSameTallies(Coarsen(Coarsen(m5, k1h), k1d), d1);
  }
  {
    SCOPED_TRACE("5m to 1d");
    ExpectSameTallies(Coarsen(m5, k1d), d1);
  }
}

TEST(TallyTest, CoarseningFinerTalliesEqualsBuildingTheCoarserTierDirectly) {
  // 3.5 days of minute points with gaps, of at most kTallyTop distinct
  // values, so that no row cuts a value into other.
  std::mt19937_64 rng(6);
  const Column raw = RandomStrings(
      rng,
      MinutePoints(
          kT0 + 13 * k1h + 7 * kMinute + 11 * kSecond, 5040,
          [](int i) { return i % 11 == 4 || (i / 60) % 17 == 5 || (i >= 1500 && i < 3000); }),
      Jobs(kTallyTop));
  ExpectCoarseningEqualsBuildingDirectly(raw);
}

TEST(TallyTest, CoarseningEqualsBuildingDirectlyAcrossTheEpoch) {
  std::mt19937_64 rng(7);
  const Column raw = RandomStrings(
      rng, MinutePoints(-2 * k1d + 3 * kMinute + 1, 4320, [](int i) { return i % 13 == 0; }),
      {"", "train", "eval", "idle"});
  ExpectCoarseningEqualsBuildingDirectly(raw);
}

TEST(TallyTest, CoarseningManyValuesKeepsExactCountsAndTimes) {
  // With more than kTallyTop values the kept counts may differ from building
  // directly, but buckets, times and counts do not, and rows stay well formed.
  std::mt19937_64 rng(8);
  const Column raw = RandomStrings(
      rng, MinutePoints(kT0 + 17 * kMinute, 4000, [](int i) { return i % 5 == 0; }), Jobs(30));
  const TallyColumn d1 = Build(raw, 0, raw.size(), k1d);
  const TallyColumn coarse = Coarsen(Build(raw, 0, raw.size(), k5m), k1d);
  ExpectWellFormed(coarse);
  EXPECT_EQ(coarse.bucket, d1.bucket);
  EXPECT_EQ(coarse.first_ts, d1.first_ts);
  EXPECT_EQ(coarse.last_ts, d1.last_ts);
  EXPECT_EQ(coarse.count, d1.count);
  EXPECT_TRUE(
      std::all_of(coarse.other.begin(), coarse.other.end(), [](uint64_t o) { return o > 0; }));
}

// ---------------------------------------------------------------------------
// EncodeTallies / DecodeTallies

// Hand-made rows at the extremes: buckets at both ends of the int64 range,
// counts near UINT64_MAX, empty and repeated values.
TallyColumn ExtremeRows() {
  TallyColumn t;
  PushRow(&t, kI64Min, kI64Min, kI64Min + k5m - 1, kU64Max, kU64Max - 3,
          {{"", 2}, {std::string(200, 'x'), 1}});
  PushRow(&t, kAfterMinWindow, kAfterMinWindow + 1, kAfterMinWindow + 1, 1, 0, {{"", 1}});
  PushRow(&t, -k5m, -k5m, -1, 5, 5, {});
  PushRow(&t, 0, 0, k5m - 1, kU64Max, 0, {{"a", kU64Max - 1}, {"b", 1}});
  PushRow(&t, kLastWindow, kI64Max, kI64Max, 9, 1,
          {{"1", 1}, {"2", 1}, {"3", 1}, {"4", 1}, {"5", 1}, {"6", 1}, {"7", 1}, {"a", 1}});
  return t;
}

// A full block of 288 5m rows of a few values, which compresses.
TallyColumn FullBlock() {
  std::mt19937_64 rng(30);
  const Column raw =
      RandomStrings(rng, MinutePoints(kT0, 288 * 5, [](int) { return false; }), Jobs(4));
  return Build(raw, 0, raw.size(), k5m);
}

TallyColumn OneRow() {
  return Build(MakeStrings({kT0 + 3, kT0 + 9}, {"train", "eval"}), 0, 2, k5m);
}

TEST(TallyTest, EncodeDecodeRoundTripsEveryRow) {
  std::mt19937_64 rng(31);
  std::vector<TallyColumn> cases = {TallyColumn(), OneRow(), FullBlock(), ExtremeRows()};
  // 288 hourly rows of many values: most rows cut values into other.
  cases.push_back(Build(
      RandomStrings(rng, MinutePoints(kT0, 288 * 60, [](int i) { return i % 3 == 1; }), Jobs(20)),
      0, 288 * 40, k1h));
  // Long strings (multi-byte lengths) among short ones, across the epoch.
  std::vector<std::string> vocabulary = {"short", std::string(300, 'l'), std::string(70'000, 'L'),
                                         "", std::string(128, '\xff')};
  for (int k = 0; k < 10; ++k) vocabulary.push_back("v" + std::to_string(k));
  cases.push_back(Build(
      RandomStrings(rng, MinutePoints(-3 * k1h, 6 * 60, [](int) { return false; }), vocabulary), 0,
      6 * 60, k1h));
  // Random random-width columns.
  for (int trial = 0; trial < 20; ++trial) {
    const int minutes = 1 + static_cast<int>(rng() % 3000);
    const Column raw =
        RandomStrings(rng,
                      MinutePoints(kT0 + static_cast<int64_t>(rng() % 1000) * kSecond, minutes,
                                   [&](int) { return rng() % 4 == 0; }),
                      Jobs(1 + rng() % 16));
    const int64_t widths[] = {k5m, k1h, k1d};
    cases.push_back(Build(raw, 0, raw.size(), widths[rng() % 3]));
  }
  for (const TallyColumn& rows : cases) {
    SCOPED_TRACE(testing::Message() << rows.size() << " rows");
    ExpectWellFormed(rows);
    const std::string bytes = Encoded(rows);
    EXPECT_TRUE(IsTallyBlock(bytes));
    TallyColumn decoded = Stale();
    const Status s = DecodeTallies(bytes, &decoded);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameTallies(decoded, rows);
  }
  EXPECT_EQ(cases[4].size(), 288u);
  EXPECT_EQ(Encoded(TallyColumn()), std::string("\x02\x00\x00\x00", 4));
}

TEST(TallyTest, IsTallyBlockTellsTallyBlocksFromRollupBlocks) {
  EXPECT_TRUE(IsTallyBlock(Encoded(OneRow())));
  EXPECT_TRUE(IsTallyBlock(Encoded(TallyColumn())));
  EXPECT_FALSE(IsTallyBlock(""));
  RollupColumn rollups;
  rollups.Reset(FieldType::kFloat);
  Column raw;
  raw.type = FieldType::kFloat;
  raw.ts = {kT0, kT0 + kMinute};
  raw.floats = {1.5, 2.5};
  BuildRollups(raw, 0, raw.size(), k5m, &rollups);
  std::string rollup_block;
  EncodeRollups(rollups, true, &rollup_block);
  EXPECT_FALSE(IsTallyBlock(rollup_block));
  TallyColumn out;
  EXPECT_TRUE(DecodeTallies(rollup_block, &out).IsCorruption());
}

// ---------------------------------------------------------------------------
// DecodeTallies on corrupt input

// Encodings of each form a decoder must read.
using Forms = BlockForms;
Forms SampleForms() {
  Forms f;
  f.tiny = Encoded(OneRow());
  f.compressed = Encoded(FullBlock());
  f.big_plain = UncompressedBlock(f.compressed);
  return f;
}

// A plain block from a body written by hand.
std::string Plain(const std::string& body) { return std::string("\x02\x00", 2) + body; }

// The body of a block of one row in bucket 0 with `values` (dictionary
// index, count) pairs, over the dictionary {"a", "b"}.
std::string OneRowBody(uint64_t first, uint64_t last, uint64_t count, uint64_t other,
                       const std::vector<std::pair<uint64_t, uint64_t>>& values) {
  std::string body;
  PutVarint64(&body, 1);  // rows
  PutVarint64(&body, 2);  // dictionary
  body.append({'\x01', 'a', '\x01', 'b'});
  PutVarint64(&body, 0);  // bucket
  PutVarint64(&body, first);
  PutVarint64(&body, last);
  PutVarint64(&body, count);
  PutVarint64(&body, other);
  PutVarint64(&body, values.size());
  for (const auto& [id, c] : values) {
    PutVarint64(&body, id);
    PutVarint64(&body, c);
  }
  return body;
}

TEST(TallyTest, DecodeRejectsMalformedHeaders) {
  const Forms f = SampleForms();
  ASSERT_EQ(f.tiny[1], 0) << "the tiny block must stay plain";
  ASSERT_EQ(f.compressed[1], 2) << "the full block must compress";
  TallyColumn out;
  ASSERT_TRUE(DecodeTallies(f.tiny, &out).ok());
  ASSERT_TRUE(DecodeTallies(f.compressed, &out).ok());
  ASSERT_TRUE(DecodeTallies(f.big_plain, &out).ok());
  ExpectSameTallies(out, FullBlock());

  EXPECT_TRUE(DecodeTallies("", &out).IsCorruption());
  EXPECT_TRUE(DecodeTallies(std::string_view("\x02", 1), &out).IsCorruption());
  for (const std::string* block : {&f.tiny, &f.compressed}) {
    for (char format : {'\x00', '\x01', '\x03', '\xff'}) {
      std::string bad = *block;
      bad[0] = format;
      EXPECT_TRUE(DecodeTallies(bad, &out).IsCorruption()) << int{format};
    }
    for (char compression : {'\x03', '\x7f', '\xff'}) {
      std::string bad = *block;
      bad[1] = compression;
      EXPECT_TRUE(DecodeTallies(bad, &out).IsCorruption()) << int{compression};
    }
  }
  // A plain body read as zstd, with and without the frame's magic number;
  // a frame stored without its magic number read as one that has it.
  std::string swapped = f.big_plain;
  for (char compression : {'\x01', '\x02'}) {
    swapped[1] = compression;
    EXPECT_TRUE(DecodeTallies(swapped, &out).IsCorruption()) << int{compression};
  }
  ASSERT_EQ(f.compressed[1], '\x02');
  swapped = f.compressed;
  swapped[1] = 1;
  EXPECT_TRUE(DecodeTallies(swapped, &out).IsCorruption());
}

TEST(TallyTest, DecodeRejectsRowsThatBreakTheInvariants) {
  TallyColumn out;
  // The hand-written body decodes when it is right.
  ASSERT_TRUE(DecodeTallies(Plain(OneRowBody(1, 2, 5, 1, {{1, 3}, {0, 1}})), &out).ok());
  ExpectSameTallies(out, [] {
    TallyColumn t;
    PushRow(&t, 0, 1, 2, 5, 1, {{"b", 3}, {"a", 1}});
    return t;
  }());
  struct Case {
    const char* what;
    std::string body;
  };
  std::string two_rows;
  PutVarint64(&two_rows, 2);
  PutVarint64(&two_rows, 0);
  two_rows += std::string("\x0a\x00\x00\x01\x01\x00", 6);  // bucket 5, one sample in other
  two_rows += std::string("\x00\x00\x00\x01\x01\x00", 6);  // bucket 5 again
  std::string huge_rows;
  PutVarint64(&huge_rows, uint64_t{1} << 40);
  PutVarint64(&huge_rows, 0);
  huge_rows += std::string(64, '\0');
  std::string huge_dictionary;
  PutVarint64(&huge_dictionary, 0);
  PutVarint64(&huge_dictionary, kU64Max);
  huge_dictionary += std::string(64, '\0');
  std::string past_int64;
  PutVarint64(&past_int64, 1);
  PutVarint64(&past_int64, 0);
  PutVarint64(&past_int64, ZigZagEncode(static_cast<uint64_t>(kLastWindow)));
  PutVarint64(&past_int64, 0);
  PutVarint64(&past_int64, static_cast<uint64_t>(kI64Max - kLastWindow) + 1);
  past_int64 += std::string("\x01\x01\x00", 3);
  const std::vector<std::pair<uint64_t, uint64_t>> nine(9, {0, 1});
  const std::string whole_row = OneRowBody(0, 0, 1, 0, {{0, 1}});
  const Case cases[] = {
      {"index out of range", OneRowBody(0, 0, 2, 0, {{0, 1}, {2, 1}})},
      {"nine values", OneRowBody(0, 0, 9, 0, nine)},
      {"first after last", OneRowBody(3, 2, 1, 0, {{0, 1}})},
      {"counts short", OneRowBody(0, 0, 5, 1, {{0, 3}})},
      {"counts past", OneRowBody(0, 0, 5, 1, {{0, 3}, {1, 2}})},
      {"other past the count", OneRowBody(0, 0, 1, 2, {})},
      {"counts wrap", OneRowBody(0, 0, 5, 1, {{0, kU64Max}, {1, 5}})},
      {"trailing bytes", whole_row + '\0'},
      {"missing pair count", whole_row.substr(0, whole_row.size() - 1)},
      {"buckets not ascending", two_rows},
      {"huge row count", huge_rows},
      {"huge dictionary", huge_dictionary},
      {"time past int64", past_int64},
  };
  for (const Case& c : cases) {
    const Status s = DecodeTallies(Plain(c.body), &out);
    EXPECT_TRUE(s.IsCorruption()) << c.what << ": " << s.ToString();
  }
}

TEST(TallyTest, DecodeRejectsEveryTruncation) {
  const Forms f = SampleForms();
  for (const std::string* block : {&f.tiny, &f.compressed, &f.big_plain}) {
    SCOPED_TRACE(testing::Message() << block->size() << " bytes");
    for (size_t len = 0; len < block->size(); ++len) {
      TallyColumn out;
      const Status s = DecodeTallies(std::string_view(block->data(), len), &out);
      EXPECT_TRUE(s.IsCorruption()) << "prefix of " << len << ": " << s.ToString();
      if (!s.IsCorruption()) return;  // one report is enough
    }
  }
}

TEST(TallyTest, DecodeSurvivesFlippingEachByte) {
  const Forms f = SampleForms();
  for (const std::string* block : {&f.tiny, &f.compressed, &f.big_plain}) {
    SCOPED_TRACE(testing::Message() << block->size() << " bytes");
    for (size_t at = 0; at < block->size(); ++at) {
      for (int mask : {0x01, 0x80, 0xff}) {
        std::string bad = *block;
        bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(mask));
        TallyColumn out;
        const Status s = DecodeTallies(bad, &out);
        EXPECT_TRUE(s.ok() || s.IsCorruption()) << s.ToString();
        if (s.ok()) ExpectWellFormed(out);
      }
    }
  }
}

TEST(TallyTest, DecodeSurvivesRandomByteFlips) {
  const Forms f = SampleForms();
  std::mt19937_64 rng(40);
  for (const std::string* block : {&f.tiny, &f.compressed, &f.big_plain}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = *block;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < flips; ++k) {
        const size_t at = rng() % bad.size();
        bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
      }
      TallyColumn out;
      const Status s = DecodeTallies(bad, &out);
      if (s.ok()) {
        ExpectWellFormed(out);
        // Decoded rows must be usable: merging them stays in bounds.
        TallyColumn merged;
        CoarsenTallies(out, k1d, &merged);
        ExpectWellFormed(merged);
      }
    }
  }
}

}  // namespace
}  // namespace gpulse::storage
