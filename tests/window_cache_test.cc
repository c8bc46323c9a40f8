// The decoded-window cache: its own rules (bound, CLOCK with admission by
// frequency, epoch refusal), and
// through the Db that a cached window never hides points a later flush
// stored in the same window, nor a cached "no chunk here" the first chunk
// a later flush stores in a window.

#include "engine/window_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/frequency_sketch.h"
#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

using engine::WindowCache;
using engine::WindowKey;

// The count and the sum of the answer's first row, a query of `count(util),
// sum(util)` (0, 0 for no series).
std::pair<int64_t, int64_t> CountAndSum(Db* db, const std::string& q =
                                                    "SELECT count(util), sum(util) "
                                                    "FROM gpu") {
  QueryResult r;
  EXPECT_TRUE(gpulse::Query(db, q, {}, &r).ok());
  EXPECT_TRUE(r.statements.at(0).status.ok());
  if (r.statements[0].series.empty()) return {0, 0};
  const auto& row = r.statements[0].series[0].values.at(0);
  return {std::get<int64_t>(row[1]), std::get<int64_t>(row[2])};
}

storage::Column Ints(std::initializer_list<int64_t> ts) {
  storage::Column c;
  c.type = FieldType::kInt;
  for (int64_t t : ts) {
    c.ts.push_back(t);
    c.ints.push_back(t * 10);
  }
  return c;
}

TEST(WindowCacheTest, KeepsWhatItIsGivenAndFindsItByKey) {
  WindowCache cache(1 << 20);
  cache.Insert({1, 2, 0}, Ints({1, 2, 3}), cache.epoch());
  auto hit = cache.Lookup({1, 2, 0});
  ASSERT_NE(hit, nullptr);
  storage::Column scratch;
  EXPECT_EQ(hit->View(&scratch).ts, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(hit->View(&scratch).ints, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(cache.Lookup({1, 3, 0}), nullptr);
  EXPECT_EQ(cache.Lookup({1, 2, 86400}), nullptr);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().misses, 2u);
}

// What the cache keeps reads back exactly as it was given, whichever parts
// pack: steady or uneven times (at the ends of the int64 range too);
// integers in 1, 2 or 4 bytes or not at all (the full int64 range);
// unsigned values past INT64_MAX; floats, strings and bools as they are;
// empty and one-point windows.
TEST(PackedWindowTest, ViewGivesBackTheColumnExactly) {
  auto column = [](FieldType type, std::vector<int64_t> ts) {
    storage::Column c;
    c.type = type;
    c.ts = std::move(ts);
    return c;
  };
  std::vector<int64_t> steady, uneven;
  for (int64_t i = 0; i < 1440; ++i) {
    steady.push_back(1704067200000000000 + i * 60000000000);
    uneven.push_back(1704067200000000000 + i * 60000000000 + (i % 7 == 0 ? 1 : 0));
  }
  std::vector<storage::Column> cases;
  for (const auto& ts : {steady, uneven}) {
    for (int64_t span : {int64_t{100}, int64_t{60000}, int64_t{4000000000}}) {
      storage::Column c = column(FieldType::kInt, ts);
      for (size_t i = 0; i < ts.size(); ++i) {
        c.ints.push_back(-7 + static_cast<int64_t>((i * 7919) % static_cast<size_t>(span)));
      }
      cases.push_back(c);
    }
    storage::Column wide = column(FieldType::kInt, ts);
    for (size_t i = 0; i < ts.size(); ++i) wide.ints.push_back(i % 2 ? INT64_MAX : INT64_MIN);
    cases.push_back(wide);
    storage::Column big = column(FieldType::kUint, ts);
    for (size_t i = 0; i < ts.size(); ++i) big.uints.push_back(UINT64_MAX - i);
    cases.push_back(big);
    storage::Column floats = column(FieldType::kFloat, ts);
    for (size_t i = 0; i < ts.size(); ++i) floats.floats.push_back(static_cast<double>(i) / 3);
    cases.push_back(floats);
    storage::Column strings = column(FieldType::kString, ts);
    for (size_t i = 0; i < ts.size(); ++i) strings.strings.push_back(i % 3 ? "busy" : "idle");
    cases.push_back(strings);
    storage::Column bools = column(FieldType::kBool, ts);
    for (size_t i = 0; i < ts.size(); ++i) bools.bools.push_back(i % 2);
    cases.push_back(bools);
  }
  // Steady times at the ends of the int64 range, and a step past INT64_MAX / 2.
  for (std::vector<int64_t> ts : {std::vector<int64_t>{INT64_MAX - 20, INT64_MAX - 10, INT64_MAX},
                                  std::vector<int64_t>{INT64_MIN, INT64_MIN + 7, INT64_MIN + 14},
                                  std::vector<int64_t>{-(int64_t{1} << 62), 0, int64_t{1} << 62}}) {
    storage::Column c = column(FieldType::kInt, ts);
    c.ints = {3, 1, 2};
    cases.push_back(c);
  }
  cases.push_back(column(FieldType::kInt, {}));
  storage::Column one = column(FieldType::kInt, {5});
  one.ints.push_back(-3);
  cases.push_back(one);

  storage::Column scratch;
  for (size_t k = 0; k < cases.size(); ++k) {
    const storage::Column& want = cases[k];
    const engine::PackedWindow packed(want);
    const storage::Column& got = packed.View(&scratch);
    EXPECT_EQ(got.type, want.type) << k;
    EXPECT_EQ(got.ts, want.ts) << k;
    EXPECT_EQ(got.ints, want.ints) << k;
    EXPECT_EQ(got.uints, want.uints) << k;
    EXPECT_EQ(got.floats, want.floats) << k;
    EXPECT_EQ(got.strings, want.strings) << k;
    EXPECT_EQ(got.bools, want.bools) << k;
  }
}

// A view of [lo, hi) of a packed window holds exactly the window's points in
// [lo, hi): bounds on a point, between points, before the first, past the
// last, an empty range.
TEST(PackedWindowTest, ViewOfARangeHoldsThatRangesPoints) {
  storage::Column steady, uneven;
  steady.type = uneven.type = FieldType::kInt;
  for (int64_t i = 0; i < 1440; ++i) {
    steady.ts.push_back(1704067200000000000 + i * 60000000000);
    uneven.ts.push_back(1704067200000000000 + i * 60000000000 + (i % 5 == 0 ? 7 : 0));
    steady.ints.push_back(i % 101);
    uneven.ints.push_back(i % 101);
  }
  const int64_t t0 = 1704067200000000000, minute = 60000000000;
  storage::Column scratch;
  for (const storage::Column* want : {&steady, &uneven}) {
    const engine::PackedWindow packed(*want);
    for (const auto& [lo, hi] :
         {std::pair{t0 + 60 * minute, t0 + 120 * minute}, std::pair{t0 + 1, t0 + 3 * minute + 1},
          std::pair{t0 - minute, t0 + 2 * minute}, std::pair{t0 + 1439 * minute, INT64_MAX},
          std::pair{INT64_MIN, t0}, std::pair{t0 + 5 * minute, t0 + 5 * minute},
          std::pair{t0 + 2000 * minute, t0 + 3000 * minute}}) {
      const storage::Column& got = packed.View(&scratch, lo, hi);
      std::vector<int64_t> want_ts, got_ts;
      std::vector<int64_t> want_v, got_v;
      for (size_t i = 0; i < want->ts.size(); ++i) {
        if (want->ts[i] >= lo && want->ts[i] < hi) {
          want_ts.push_back(want->ts[i]);
          want_v.push_back(want->ints[i]);
        }
      }
      for (size_t i = 0; i < got.ts.size(); ++i) {
        if (got.ts[i] >= lo && got.ts[i] < hi) {
          got_ts.push_back(got.ts[i]);
          got_v.push_back(got.ints[i]);
        }
      }
      EXPECT_EQ(got_ts, want_ts) << lo << " " << hi;
      EXPECT_EQ(got_v, want_v) << lo << " " << hi;
      // Packed windows unpack just the range.
      EXPECT_EQ(got.ts, want_ts) << lo << " " << hi;
      EXPECT_EQ(got.ints.size(), got.ts.size());
    }
  }
}

// The point of packing: a day of minute samples of a small integer (GPU
// utilisation) is kept in about a byte a point, not 16.
TEST(PackedWindowTest, ADayOfUtilisationTakesAboutAByteAPoint) {
  storage::Column c;
  c.type = FieldType::kInt;
  for (int64_t i = 0; i < 1440; ++i) {
    c.ts.push_back(1704067200000000000 + i * 60000000000);
    c.ints.push_back(i % 101);
  }
  EXPECT_LT(engine::PackedWindow(c).bytes(), 1440u * 2);
}

// The table under many inserts and invalidations (probe runs that wrap,
// holes shifted back): every key kept is found with its own value, every
// key dropped is not, against a plain map.
TEST(WindowCacheTest, FindsExactlyWhatItHoldsThroughInsertsAndInvalidations) {
  WindowCache cache(1ull << 40);  // no eviction: the set is known
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, int64_t> want;
  std::mt19937_64 rng(7);
  storage::Column scratch;
  for (int round = 0; round < 4000; ++round) {
    const WindowKey key{static_cast<uint32_t>(rng() % 64), static_cast<uint32_t>(rng() % 4),
                        static_cast<int64_t>(rng() % 8) * 86400};
    const auto k = std::make_tuple(key.series_id, key.field_id, key.window_start);
    if (rng() % 3 == 0) {
      cache.Invalidate({key});
      want.erase(k);
    } else {
      const int64_t v = static_cast<int64_t>(rng() % 1000);
      cache.Insert(key, Ints({v}), cache.epoch());
      want[k] = v;
    }
  }
  EXPECT_EQ(cache.stats().entries, want.size());
  for (uint32_t s = 0; s < 64; ++s) {
    for (uint32_t f = 0; f < 4; ++f) {
      for (int64_t w = 0; w < 8; ++w) {
        auto hit = cache.Lookup({s, f, w * 86400});
        auto it = want.find({s, f, w * 86400});
        ASSERT_EQ(hit != nullptr, it != want.end()) << s << " " << f << " " << w;
        if (hit) {
          EXPECT_EQ(hit->View(&scratch).ts, (std::vector<int64_t>{it->second}));
        }
      }
    }
  }
}

TEST(WindowCacheTest, RefusesADecodeFromBeforeAnInvalidation) {
  WindowCache cache(1 << 20);
  const uint64_t before = cache.epoch();
  cache.Invalidate({{9, 9, 9}});  // a flush wrote some window meanwhile
  cache.Insert({1, 2, 0}, Ints({1}), before);
  EXPECT_EQ(cache.Lookup({1, 2, 0}), nullptr);
  cache.Insert({1, 2, 0}, Ints({1}), cache.epoch());
  EXPECT_NE(cache.Lookup({1, 2, 0}), nullptr);
}

TEST(WindowCacheTest, InvalidateDropsTheWindowsWrittenAndClearDropsAll) {
  WindowCache cache(1 << 20);
  cache.Insert({1, 1, 0}, Ints({1}), cache.epoch());
  cache.Insert({2, 1, 0}, Ints({1}), cache.epoch());
  cache.Invalidate({{1, 1, 0}});
  EXPECT_EQ(cache.Lookup({1, 1, 0}), nullptr);
  EXPECT_NE(cache.Lookup({2, 1, 0}), nullptr);
  cache.Clear();
  EXPECT_EQ(cache.Lookup({2, 1, 0}), nullptr);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

// The admission filter's counts: never under the truth (until halved), close
// to it for most keys at the load it is sized for, and halved after ten
// lookups for each key it has room for.
TEST(FrequencySketchTest, CountsLookupsCloselyAndForgetsByHalving) {
  engine::FrequencySketch sketch;
  sketch.Resize(1000);
  const auto hash = [](uint64_t k) { return std::hash<uint64_t>()(k) * 0x9E3779B97F4A7C15ull; };
  // 1,000 keys, key k asked for k % 8 times.
  for (uint64_t k = 0; k < 1000; ++k) {
    for (uint64_t n = 0; n < k % 8; ++n) sketch.Add(hash(k));
  }
  int exact = 0;
  for (uint64_t k = 0; k < 1000; ++k) {
    const int e = sketch.Estimate(hash(k));
    ASSERT_GE(e, static_cast<int>(k % 8)) << k;
    exact += e == static_cast<int>(k % 8);
  }
  EXPECT_GT(exact, 900);
  // 3,500 lookups so far. Room for 1,024 keys (a power of two), so every
  // count is halved at the 10,240th.
  for (int n = 0; n < 7000; ++n) sketch.Add(hash(5000 + n % 3));
  EXPECT_LE(sketch.Estimate(hash(7)), 3);
}

// Each entry is 100 points at uneven times, values too wide to pack (1,600
// bytes plus overhead).
storage::Column Unpackable() {
  storage::Column c;
  c.type = FieldType::kInt;
  for (int i = 0; i < 100; ++i) {
    c.ts.push_back(i * i);
    c.ints.push_back(i % 2 ? INT64_MAX : 0);
  }
  return c;
}

// What a reader does: looks the window up, and on a miss decodes and offers it.
bool Read(WindowCache* cache, const WindowKey& key) {
  if (cache->Lookup(key) != nullptr) return true;
  cache->Insert(key, Unpackable(), cache->epoch());
  return false;
}

TEST(WindowCacheTest, StaysWithinItsBytesKeepingWhatIsAskedForMostOften) {
  WindowCache cache(16 << 10);  // room for a few
  for (uint32_t s = 0; s < 20; ++s) {
    Read(&cache, {s, 0, 0});
    ASSERT_TRUE(Read(&cache, {0, 0, 0})) << s;  // asked for each time: never out
    EXPECT_LE(cache.stats().bytes, 16u << 10);
  }
  // Full, a window asked for once does not push out one asked for as often...
  EXPECT_GT(cache.stats().refused, 0u);
  EXPECT_FALSE(Read(&cache, {19, 0, 0}));
  // ... and one asked for again does.
  EXPECT_TRUE(Read(&cache, {19, 0, 0}));
  EXPECT_TRUE(Read(&cache, {0, 0, 0}));
  EXPECT_LE(cache.stats().bytes, 16u << 10);
}

// Issue 23's cold fleet reads: a query that reads ten times what the cache
// holds, once, between the rounds of a dashboard that asks for the same
// windows every round, leaves the dashboard's windows cached; without the
// admission rule (CLOCK alone) it pushed every one of them out.
TEST(WindowCacheTest, AOneOffReadLargerThanTheCacheLeavesTheWindowsAskedForAgain) {
  WindowCache cache(256 << 10);  // about 140 entries
  constexpr uint32_t kDashboard = 60;
  for (int round = 0; round < 3; ++round) {
    for (uint32_t s = 0; s < kDashboard; ++s) Read(&cache, {s, 1, 0});
  }
  uint32_t next = 1000;
  for (int scan = 0; scan < 3; ++scan) {
    for (uint32_t s = 0; s < 1400; ++s) Read(&cache, {next++, 2, 0});
    EXPECT_LE(cache.stats().bytes, 256u << 10);
    int kept = 0;
    for (uint32_t s = 0; s < kDashboard; ++s) kept += Read(&cache, {s, 1, 0});
    EXPECT_EQ(kept, static_cast<int>(kDashboard)) << "after scan " << scan;
  }
  // The cache is not frozen: a new set asked for round after round comes in
  // as it is asked for more often than what is kept (here, by the eighth
  // round, the old set's counts not yet halved).
  int kept = 0;
  for (int round = 0; round < 8; ++round) {
    kept = 0;
    for (uint32_t s = 0; s < kDashboard; ++s) kept += Read(&cache, {5000 + s, 3, 0});
  }
  EXPECT_EQ(kept, static_cast<int>(kDashboard));
}

TEST(WindowCacheTest, ANewPartFlushedIntoACachedWindowIsSeen) {
  storage::ScratchDir dir;
  const std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
  ASSERT_NE(db, nullptr);
  const int64_t day = 1704067200'000'000'000;
  const int64_t minute = 60'000'000'000;
  auto write = [&](int from, int to) {
    std::vector<Point> points;
    for (int i = from; i < to; ++i) {
      points.push_back({"gpu", {{"node", "a"}}, {{"util", int64_t{i}}}, day + i * minute});
    }
    ASSERT_TRUE(db->Write(points).ok());
  };
  auto count = [&] { return CountAndSum(db.get()); };
  write(0, 100);
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{100}, int64_t{4950}));  // decodes, caches
  EXPECT_EQ(count(), std::make_pair(int64_t{100}, int64_t{4950}));  // from the cache
  EXPECT_GT(db->GetStats().window_cache_hits, 0u);
  write(100, 200);  // same day window: the next flush adds a part to it
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{200}, int64_t{19900}));
  // Replace one value (50 -> 1000), flush it as a third part, then merge
  // the parts by compaction: every step must show the new value.
  ASSERT_TRUE(
      db->Write({{"gpu", {{"node", "a"}}, {{"util", int64_t{1000}}}, day + 50 * minute}}).ok());
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{200}, int64_t{20850}));
  ASSERT_TRUE(db->Compact().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{200}, int64_t{20850}));
}

// A flush writes its LevelDB batches as they fill (8 MiB), each worker
// (one a core, for a head of 4,096 series or more) dropping from the cache
// the windows of each batch it has written: every window cached before must
// show the flush's new points, in whichever batch it was written. Each point
// carries 6 KiB of text, so each worker's share of a flush fills batches.
TEST(WindowCacheTest, AFlushWrittenInManyBatchesDropsEveryWindowItWroteFromTheCache) {
  storage::ScratchDir dir;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  options.tiers = {};  // the raw windows answer
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  constexpr int kSeries = 4200;
  const int64_t day = 1704067200'000'000'000;
  const int64_t minute = 60'000'000'000;
  std::mt19937_64 random(7);
  auto write = [&](int at_minute, int64_t value) {
    std::vector<std::string> texts(kSeries, std::string(6 << 10, ' '));
    std::vector<Point> points;
    for (int s = 0; s < kSeries; ++s) {
      for (char& c : texts[s]) c = static_cast<char>('a' + random() % 26);
      points.push_back({"gpu",
                        {{"gpu", std::to_string(s)}},
                        {{"util", value}, {"log", texts[s]}},
                        day + at_minute * minute});
    }
    ASSERT_TRUE(db->Write(points).ok());
  };
  auto count = [&] { return CountAndSum(db.get()); };
  write(0, 1);
  ASSERT_TRUE(db->Flush().ok());
  const std::pair<int64_t, int64_t> first{kSeries, kSeries};
  EXPECT_EQ(count(), first);
  EXPECT_EQ(count(), first);
  const uint64_t hits = db->GetStats().window_cache_hits;
  EXPECT_EQ(count(), first);
  EXPECT_GE(db->GetStats().window_cache_hits, hits + kSeries) << "the windows were not cached";
  write(1, 2);  // every series' cached window gets a second part
  ASSERT_TRUE(db->Flush().ok());
  const std::pair<int64_t, int64_t> both{2 * kSeries, 3 * kSeries};
  EXPECT_EQ(count(), both);
  EXPECT_EQ(count(), both);
}

// A scan of many series looks each series' first window up in the cache a
// chunk of series at a time, under one hold of its lock: once a window (the
// cache counts lookups to choose what it keeps), and what it hands over is
// what reading each series alone gives, whether the window came from the
// cache or the store, with unflushed points after it or not.
TEST(WindowCacheTest, AScanOfManySeriesLooksEachWindowUpOnceAndReadsWhatEachAloneReads) {
  storage::ScratchDir dir;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  options.tiers = {};
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  constexpr int kSeries = 700, kMinutes = 30;  // more than one chunk of series
  const int64_t day = 1704067200'000'000'000;
  const int64_t minute = 60'000'000'000;
  std::vector<Point> points;
  for (int s = 0; s < kSeries; ++s) {
    for (int m = 0; m < kMinutes; ++m) {
      Point p{"gpu", {{"gpu", std::to_string(s)}}, {{"util", int64_t{s + m}}}, day + m * minute};
      // One series in three has a second field.
      if (s % 3 == 0) p.fields.push_back({"power", 100.5 + s});
      points.push_back(std::move(p));
    }
  }
  ASSERT_TRUE(db->Write(points).ok());
  ASSERT_TRUE(db->Flush().ok());
  // Unflushed points after the stored ones for every fifth series.
  points.clear();
  for (int s = 0; s < kSeries; s += 5) {
    points.push_back(
        {"gpu", {{"gpu", std::to_string(s)}}, {{"util", int64_t{-1}}}, day + kMinutes * minute});
  }
  ASSERT_TRUE(db->Write(points).ok());

  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), static_cast<size_t>(kSeries));
  const std::vector<std::string> fields = {"util", "power"};
  const int64_t start = day, end = day + (kMinutes + 1) * minute;
  // (count, sum) of each series' fields, by ScanSeries of all.
  using Totals = std::vector<std::pair<int64_t, double>>;
  const auto scan_all = [&] {
    Totals totals(ids.size() * fields.size());
    const Status st = db->ScanSeries(
        ids, fields, start, end,
        [&](size_t s, size_t f, const Column& column, size_t b, size_t e) {
          auto& [count, sum] = totals[s * fields.size() + f];
          count += static_cast<int64_t>(e - b);
          for (size_t i = b; i < e; ++i) {
            sum += column.type == FieldType::kInt ? static_cast<double>(column.ints[i])
                                                  : column.floats[i];
          }
        },
        nullptr);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return totals;
  };
  Totals alone(ids.size() * fields.size());
  for (size_t s = 0; s < ids.size(); ++s) {
    std::vector<Column> columns;
    ASSERT_TRUE(db->ReadSeries(ids[s], fields, start, end, &columns).ok());
    for (size_t f = 0; f < fields.size(); ++f) {
      auto& [count, sum] = alone[s * fields.size() + f];
      count = static_cast<int64_t>(columns[f].ts.size());
      for (size_t i = 0; i < columns[f].ts.size(); ++i) {
        sum += columns[f].type == FieldType::kInt ? static_cast<double>(columns[f].ints[i])
                                                  : columns[f].floats[i];
      }
    }
  }
  // A window a series-field (one with no chunk of power is cached as that),
  // and again for a series with unflushed points: its stored window read for
  // the range from them on, to merge them in.
  const uint64_t windows = kSeries * fields.size();
  const uint64_t again = kSeries / 5;
  const DbStats before = db->GetStats();
  EXPECT_EQ(scan_all(), alone);  // from the cache ReadSeries filled
  const DbStats after = db->GetStats();
  EXPECT_EQ(after.window_cache_hits - before.window_cache_hits, windows + again);
  EXPECT_EQ(after.window_cache_misses, before.window_cache_misses);
  ASSERT_TRUE(db->Compact().ok());  // clears the cache
  const DbStats cleared = db->GetStats();
  EXPECT_EQ(scan_all(), alone);  // from the store
  const DbStats read = db->GetStats();
  EXPECT_EQ(read.window_cache_misses - cleared.window_cache_misses, windows);
  EXPECT_EQ(read.window_cache_hits, cleared.window_cache_hits);
}

TEST(WindowCacheTest, AWindowCachedAsEmptyShowsTheFirstChunkFlushedIntoIt) {
  storage::ScratchDir dir;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  options.out_of_order_window = std::chrono::hours(24 * 30);
  options.tiers = {};  // whole days would be answered from the 1d tier
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  const int64_t day = 1704067200'000'000'000;
  const int64_t one_day = 86'400'000'000'000;
  auto write = [&](int64_t t, int64_t v) {
    ASSERT_TRUE(db->Write({{"gpu", {{"node", "a"}}, {{"util", v}}, t}}).ok());
  };
  // Three days asked for; only the third has a chunk.
  const std::string q =
      "SELECT count(util), sum(util) FROM gpu WHERE time >= " + std::to_string(day) +
      " AND time < " + std::to_string(day + 3 * one_day);
  auto count = [&] { return CountAndSum(db.get(), q); };
  write(day + 2 * one_day + 5, 7);
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{1}, int64_t{7}));  // days 1 and 2 cached as empty
  const uint64_t hits = db->GetStats().window_cache_hits;
  EXPECT_EQ(count(), std::make_pair(int64_t{1}, int64_t{7}));  // all three from the cache
  EXPECT_EQ(db->GetStats().window_cache_hits, hits + 3);
  write(day + one_day + 5, 100);  // the first chunk of day 2
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{2}, int64_t{107}));
  EXPECT_EQ(count(), std::make_pair(int64_t{2}, int64_t{107}));
  ASSERT_TRUE(db->Compact().ok());
  write(day + 5, 1000);  // day 1, after a compaction cleared the cache
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(count(), std::make_pair(int64_t{3}, int64_t{1107}));
}

}  // namespace
}  // namespace gpulse
