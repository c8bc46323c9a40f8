// The flat aggregate cells (query/exec/cells.h) against the general aggregate
// states and against answers computed here: the same rows, bit for bit, for
// every cell aggregate over float, integer and unsigned fields, with ties,
// irregular times, several series per group and integer sums that wrap.
//
// A query with fixed buckets over a bounded range folds into cells; the same
// query with tz('UTC') (buckets no longer fixed-width by construction) takes
// the general path and must answer the same.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "engine/gpulse.h"
#include "query/exec/cells.h"
#include "query/query.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kMinute;
using gpulse::test::kSecond;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;

class CellsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    options_.out_of_order_window = std::chrono::hours(24 * 365);
    options_.tiers = {};  // raw only: tiers take another path
    ASSERT_TRUE(Db::Open(options_, dir_.path(), &db_).ok());
  }

  QueryResult Run(const std::string& q) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, QueryOptions{}, &r).ok()) << q;
    EXPECT_EQ(r.statements.size(), 1u) << q;
    if (!r.statements.empty()) {
      EXPECT_TRUE(r.statements[0].status.ok()) << q << ": " << r.statements[0].status.ToString();
    }
    return r;
  }

  static std::string Range(int64_t lo, int64_t hi) {
    return "time >= " + std::to_string(lo) + " AND time < " + std::to_string(hi);
  }

  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

const char* const kCellAggregates[] = {"count", "sum",    "mean",  "min",
                                       "max",   "spread", "first", "last"};

TEST_F(CellsTest, EveryCellAggregateEqualsTheGeneralPathOnRandomSeries) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::string m = "gpu" + std::to_string(seed);
    std::vector<Point> points;
    for (int s = 0; s < 7; ++s) {
      // Irregular times, some shared between series (ties on first/last);
      // few distinct values (ties on min/max).
      int64_t t = kT0 + static_cast<int64_t>(rng() % 30) * kSecond;
      while (t < kT0 + 3 * 60 * kMinute) {
        Point p;
        p.measurement = m;
        p.tags = {{"grp", s % 3 == 0 ? "a" : "b"}, {"node", "n" + std::to_string(s)}};
        const int64_t small = static_cast<int64_t>(rng() % 7) - 3;
        p.fields = {{"f", static_cast<double>(small) * 0.25 + (seed == 2 ? 1e-3 * s : 0)},
                    {"i", seed == 3 ? INT64_MAX - 3 + small : small},
                    {"u", static_cast<uint64_t>(rng() % 5)}};
        p.timestamp_ns = t;
        points.push_back(std::move(p));
        t += (1 + static_cast<int64_t>(rng() % 4)) * 15 * kSecond;
      }
    }
    ASSERT_TRUE(db_->Write(points).ok());
    if (seed % 2 == 0) {
      ASSERT_TRUE(db_->Flush().ok());  // chunks as well as the head
    }

    for (const char* width : {"1m", "5m", "7m", "1h"}) {
      for (const char* field : {"f", "i", "u"}) {
        std::string sel;
        for (const char* agg : kCellAggregates) {
          sel += std::string(sel.empty() ? "" : ", ") + agg + "(" + field + ")";
        }
        const std::string q = "SELECT " + sel + " FROM " + m + " WHERE " +
                              Range(kT0 + 90 * kSecond, kT0 + 170 * kMinute) + " GROUP BY time(" +
                              width + "), grp";
        const QueryResult cells = Run(q);
        const QueryResult general = Run(q + " tz('UTC')");
        ASSERT_FALSE(cells.statements.empty());
        ASSERT_FALSE(general.statements.empty());
        const auto& a = cells.statements[0].series;
        const auto& b = general.statements[0].series;
        ASSERT_EQ(a.size(), 2u) << q;
        ASSERT_EQ(a.size(), b.size()) << q;
        for (size_t s = 0; s < a.size(); ++s) {
          EXPECT_EQ(a[s].tags, b[s].tags) << q;
          EXPECT_EQ(a[s].columns, b[s].columns) << q;
          ASSERT_EQ(a[s].values.size(), b[s].values.size()) << q;
          for (size_t r = 0; r < a[s].values.size(); ++r) {
            EXPECT_EQ(a[s].values[r], b[s].values[r]) << q << " row " << r;
          }
        }
      }
    }
  }
}

// Packs integer values as the read cache does: offsets of `width` bytes
// from the smallest value (engine::PackedWindow).
template <typename T>
std::vector<uint8_t> PackOffsets(const std::vector<T>& v, uint8_t width, uint64_t* base) {
  *base = static_cast<uint64_t>(*std::min_element(v.begin(), v.end()));
  std::vector<uint8_t> out(v.size() * width);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t off = static_cast<uint64_t>(v[i]) - *base;
    std::memcpy(out.data() + i * width, &off, width);  // little-endian host
  }
  return out;
}

TEST(CellsPackedTest, APackedRunFoldsToTheCellsItsColumnFoldsTo) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const bool is_uint = trial % 2 == 1;
    const uint8_t width = std::array<uint8_t, 3>{1, 2, 4}[rng() % 3];
    const size_t n = 1 + rng() % 300;
    const uint64_t span = width == 4 ? 0xFFFFFFFFull : (1ull << (8 * width)) - 1;
    // Bases near zero, far negative, and near the top (sums wrap; means no
    // longer sum exactly in a double, so the fold goes point by point).
    const uint64_t bases[] = {0, static_cast<uint64_t>(-1000), uint64_t{1} << 62,
                              static_cast<uint64_t>(INT64_MIN) + 5, UINT64_MAX - span};
    uint64_t base = bases[rng() % 5];
    if (is_uint && base == static_cast<uint64_t>(-1000)) base = 1000;  // no wrap past the top
    Column col;
    col.type = is_uint ? FieldType::kUint : FieldType::kInt;
    const int64_t first = kT0 + static_cast<int64_t>(rng() % 600) * kSecond;
    const int64_t step = (1 + static_cast<int64_t>(rng() % 90)) * kSecond;
    const uint64_t few = 1 + rng() % 5;  // few distinct values: ties
    for (size_t i = 0; i < n; ++i) {
      col.ts.push_back(first + static_cast<int64_t>(i) * step);
      const uint64_t v = base + (trial % 3 == 0 ? rng() % few * (span / few) : rng() % (span + 1));
      if (is_uint) {
        col.uints.push_back(v);
      } else {
        col.ints.push_back(static_cast<int64_t>(v));
      }
    }
    storage::PackedRun run;
    run.type = col.type;
    run.first = static_cast<uint64_t>(first);
    run.step = static_cast<uint64_t>(step);
    run.width = width;
    run.size = n;
    const std::vector<uint8_t> offsets = is_uint ? PackOffsets(col.uints, width, &run.base)
                                                 : PackOffsets(col.ints, width, &run.base);
    run.offsets = offsets.data();

    query::BucketGrid grid;
    grid.width = (1 + static_cast<int64_t>(rng() % 20)) * kMinute;
    grid.first = first - static_cast<int64_t>(rng() % 3) * grid.width;
    grid.count = trial % 5 == 0 ? 1 : 1 + rng() % 200;
    std::vector<query::AggSpec> specs;
    for (query::AggKind kind : {query::AggKind::kCount, query::AggKind::kSum, query::AggKind::kMean,
                                query::AggKind::kMin, query::AggKind::kMax, query::AggKind::kSpread,
                                query::AggKind::kFirst, query::AggKind::kLast}) {
      query::AggSpec spec;
      spec.kind = kind;
      spec.type = col.type;
      spec.need_time = trial % 4 == 0;
      specs.push_back(spec);
    }
    // Two calls over parts of the run, as windows cut by a range give.
    const size_t cut = rng() % (n + 1);
    query::Cells from_column, from_run;
    for (size_t slot = 0; slot < specs.size(); ++slot) {
      from_column.AddRange(specs, grid, slot, col, 0, cut);
      from_column.AddRange(specs, grid, slot, col, cut, n);
      from_run.AddPacked(specs, grid, slot, run, 0, cut);
      from_run.AddPacked(specs, grid, slot, run, cut, n);
    }
    for (size_t i = 0; i < grid.count; ++i) {
      for (size_t slot = 0; slot < specs.size(); ++slot) {
        int64_t ta = 0, tb = 0;
        EXPECT_EQ(from_run.Result(specs[slot], specs.size(), slot, i, &ta),
                  from_column.Result(specs[slot], specs.size(), slot, i, &tb))
            << "bucket " << i << " slot " << slot;
        EXPECT_EQ(ta, tb) << "bucket " << i << " slot " << slot;
      }
    }
  }
}

TEST_F(CellsTest, AnswersEqualOnesComputedHere) {
  // Two series in one group, one point a minute, values with ties.
  std::vector<Point> points;
  std::map<int64_t, std::vector<int64_t>> by_bucket;  // 5m bucket -> values
  for (int s = 0; s < 2; ++s) {
    for (int k = 0; k < 60; ++k) {
      Point p;
      p.measurement = "gpu";
      p.tags = {{"node", "n" + std::to_string(s)}};
      const int64_t v = (k * 7 + s * 3) % 11;
      p.fields = {{"i", v}};
      p.timestamp_ns = kT0 + k * kMinute + s * kSecond;
      by_bucket[k / 5].push_back(v);
      points.push_back(std::move(p));
    }
  }
  ASSERT_TRUE(db_->Write(points).ok());
  const QueryResult r = Run("SELECT count(i), sum(i), min(i), max(i) FROM gpu WHERE " +
                            Range(kT0, kT0 + 60 * kMinute) + " GROUP BY time(5m)");
  ASSERT_EQ(r.statements[0].series.size(), 1u);
  const auto& rows = r.statements[0].series[0].values;
  ASSERT_EQ(rows.size(), by_bucket.size());
  for (const auto& [b, vals] : by_bucket) {
    const auto& row = rows[static_cast<size_t>(b)];
    int64_t sum = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t v : vals) {
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_EQ(row[0], QueryValue(kT0 + b * 5 * kMinute));
    EXPECT_EQ(row[1], QueryValue(static_cast<int64_t>(vals.size())));
    EXPECT_EQ(row[2], QueryValue(sum));
    EXPECT_EQ(row[3], QueryValue(lo));
    EXPECT_EQ(row[4], QueryValue(hi));
  }
}

TEST_F(CellsTest, ALoneSelectorReportsTheEarliestPointOfATie) {
  // The minimum 2 occurs three times, in two series; the earliest wins, and
  // its time is the row's time.
  const std::vector<std::pair<int64_t, int64_t>> a = {{10, 5}, {20, 2}, {30, 2}};
  const std::vector<std::pair<int64_t, int64_t>> b = {{5, 9}, {15, 2}, {25, 7}};
  std::vector<Point> points;
  for (const auto& [series, list] : {std::pair{"a", a}, std::pair{"b", b}}) {
    for (const auto& [sec, v] : list) {
      Point p;
      p.measurement = "gpu";
      p.tags = {{"node", series}};
      p.fields = {{"i", v}};
      p.timestamp_ns = kT0 + sec * kSecond;
      points.push_back(std::move(p));
    }
  }
  ASSERT_TRUE(db_->Write(points).ok());
  const std::string range = Range(kT0, kT0 + kMinute);
  QueryResult r = Run("SELECT min(i) FROM gpu WHERE " + range);
  ASSERT_EQ(r.statements[0].series.size(), 1u);
  ASSERT_EQ(r.statements[0].series[0].values.size(), 1u);
  EXPECT_EQ(r.statements[0].series[0].values[0][0], QueryValue(kT0 + 15 * kSecond));
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{2}));

  r = Run("SELECT first(i) FROM gpu WHERE " + range);
  EXPECT_EQ(r.statements[0].series[0].values[0][0], QueryValue(kT0 + 5 * kSecond));
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{9}));

  r = Run("SELECT last(i) FROM gpu WHERE " + range);
  EXPECT_EQ(r.statements[0].series[0].values[0][0], QueryValue(kT0 + 30 * kSecond));
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{2}));

  // Without GROUP BY time, several aggregates: the range's start is the time.
  r = Run("SELECT count(i), spread(i) FROM gpu WHERE " + range);
  EXPECT_EQ(r.statements[0].series[0].values[0][0], QueryValue(kT0));
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{6}));
  EXPECT_EQ(r.statements[0].series[0].values[0][2], QueryValue(int64_t{7}));
}

}  // namespace
}  // namespace gpulse
