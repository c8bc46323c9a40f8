// The downsampling tiers through the Db and the query language: an answer
// from a tier equals the raw answer (exactly for count, sum, mean, min, max,
// spread, first and last; within the sketch's 1% for quantiles), whatever
// the series, the buckets, late points, replaced values, unflushed points,
// restarts, and a store written before tiers existed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "engine/gpulse.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "query/query.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "tests/support/first_format_rollups.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;

std::string Rfc(int64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double AsDouble(const QueryValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
  return std::nan("");
}

class TierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    options_.out_of_order_window = std::chrono::hours(24 * 365);
    options_.tiers = {"5m", "1h", "1d"};  // every tier, not the default two
    Reopen();
  }

  void Reopen() {
    db_.reset();
    ASSERT_TRUE(Db::Open(options_, dir_.path(), &db_).ok());
  }

  void Write(const std::string& node, int64_t ts, int64_t util, double power) {
    Point p;
    p.measurement = "gpu";
    p.tags = {{"node", node}, {"sku", node < "n2" ? "H100" : "A100"}};
    p.fields = {{"util", util}, {"power", power}};
    p.timestamp_ns = ts;
    ASSERT_TRUE(db_->Write({p}).ok());
  }

  QueryResult Run(const std::string& q) {
    QueryResult r;
    QueryOptions o;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, o, &r).ok()) << q;
    EXPECT_EQ(r.statements.size(), 1u);
    if (!r.statements.empty()) {
      EXPECT_TRUE(r.statements[0].status.ok()) << q << ": " << r.statements[0].status.ToString();
    }
    return r;
  }

  // The EXPLAIN line naming the tier.
  std::string TierLine(const std::string& q) {
    QueryResult r = Run("EXPLAIN " + q);
    if (r.statements.empty() || r.statements[0].series.empty()) return "";
    for (const auto& row : r.statements[0].series[0].values) {
      const auto* s = std::get_if<std::string>(&row[0]);
      if (s && s->find("tier:") != std::string::npos) return *s;
    }
    return "";
  }

  // `q` with {m} replaced by the measurement as FROM names it.
  static std::string With(std::string q, const std::string& from) {
    const size_t at = q.find("{m}");
    return q.replace(at, 3, from);
  }

  // Runs `q` from the automatic choice and from raw and compares every cell:
  // exactly (or within 1e-9 relative for sums re-associated), or within
  // `rel` for quantiles.
  void ExpectTierEqualsRaw(const std::string& q, double rel = 1e-9) {
    const QueryResult a = Run(With(q, "gpu"));
    const QueryResult b = Run(With(q, "\"raw\".gpu"));
    ASSERT_FALSE(a.statements.empty());
    ASSERT_FALSE(b.statements.empty());
    const auto& sa = a.statements[0].series;
    const auto& sb = b.statements[0].series;
    ASSERT_EQ(sa.size(), sb.size()) << q;
    for (size_t s = 0; s < sa.size(); ++s) {
      ASSERT_EQ(sa[s].tags, sb[s].tags) << q;
      ASSERT_EQ(sa[s].values.size(), sb[s].values.size()) << q;
      for (size_t r = 0; r < sa[s].values.size(); ++r) {
        for (size_t c = 0; c < sa[s].values[r].size(); ++c) {
          const QueryValue& x = sa[s].values[r][c];
          const QueryValue& y = sb[s].values[r][c];
          if (c == 0 || std::holds_alternative<std::monostate>(y)) {
            EXPECT_EQ(x, y) << q << " row " << r << " column " << c;
            continue;
          }
          const double dx = AsDouble(x), dy = AsDouble(y);
          EXPECT_LE(std::fabs(dx - dy), rel * std::max(1.0, std::fabs(dy)))
              << q << " row " << r << " column " << sa[s].columns[c] << ": tier " << dx << " raw "
              << dy;
        }
      }
    }
  }

  // Closes the Db, deletes the tier blocks `drop` picks (by their value)
  // and sets the format version: the store as an older gpulse left it.
  // Returns how many blocks went.
  size_t MakeOlderStore(uint32_t version, const std::function<bool(const std::string&)>& drop) {
    db_.reset();
    leveldb::DB* raw = nullptr;
    EXPECT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    leveldb::WriteBatch batch;
    std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
    size_t dropped = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      storage::ChunkKeyParts k;
      if (storage::ParseChunkKey(it->key().ToString(), &k) && k.tier != storage::kRawTier &&
          drop(it->value().ToString())) {
        batch.Delete(it->key());
        ++dropped;
      }
    }
    std::string bytes;
    storage::PutU32BE(&bytes, version);
    batch.Put(storage::VersionKey(), bytes);
    EXPECT_TRUE(store->Write(leveldb::WriteOptions(), &batch).ok());
    return dropped;
  }

  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

const char* const kExact[] = {"count", "sum", "mean", "min", "max", "spread", "first", "last"};

TEST_F(TierTest, EveryExactAggregateFromEveryTierEqualsRawOnRandomSeries) {
  std::mt19937_64 rng(7);
  // Three days of four series with random gaps and values; some points far
  // from the minute grid.
  for (const char* node : {"n0", "n1", "n2", "n3"}) {
    for (int64_t t = kT0; t < kT0 + 3 * kDay; t += kMinute) {
      if (rng() % 7 == 0) continue;
      const int64_t jitter = static_cast<int64_t>(rng() % 1000) * 1'000'000;
      Write(node, t + jitter, static_cast<int64_t>(rng() % 101) - 5,
            100 + static_cast<double>(rng() % 100000) / 100);
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 3 * kDay) + "'";
  for (const char* bucket : {"5m", "15m", "1h", "3h", "1d", "2d"}) {
    for (const char* fn : kExact) {
      for (const char* field : {"util", "power"}) {
        const std::string q = std::string("SELECT ") + fn + "(" + field + ") FROM {m}" + range +
                              " GROUP BY time(" + bucket + "), sku";
        ExpectTierEqualsRaw(q);
      }
    }
  }
  // Ranges off every grid (as dashboards send: now() - 6h, epoch ms):
  // the whole tier buckets inside from the tier, the ends from raw.
  for (const auto& [lo, hi] :
       {std::pair{kT0 + 17 * kMinute + 3'000'000'000, kT0 + 3 * kDay - 7 * kMinute},
        std::pair{kT0 + 5 * kHour + 1, kT0 + 2 * kDay + 1},
        std::pair{kT0 - kHour, kT0 + kDay + 30 * kMinute}}) {
    const std::string off =
        " WHERE time >= " + std::to_string(lo) + " AND time < " + std::to_string(hi);
    for (const char* bucket : {"5m", "1h", "1d"}) {
      ExpectTierEqualsRaw(
          "SELECT count(util), sum(util), mean(power), min(util), max(power), "
          "first(util), last(power) FROM {m}" +
          off + " GROUP BY time(" + bucket + "), sku");
    }
    ExpectTierEqualsRaw("SELECT count(util), max(power), first(util), last(util) FROM {m}" + off);
    ExpectTierEqualsRaw("SELECT p95(power), median(util) FROM {m}" + off + " GROUP BY time(1d)",
                        0.0101);
  }
  // No GROUP BY time: one bucket, the whole range (the 1d tier).
  ExpectTierEqualsRaw(
      "SELECT count(util), sum(util), mean(power), first(util), last(power) FROM {m}" + range);
  EXPECT_NE(TierLine("SELECT max(util) FROM gpu" + range + " GROUP BY time(2d)").find("1d rollups"),
            std::string::npos);
  EXPECT_NE(TierLine("SELECT max(util) FROM gpu" + range + " GROUP BY time(3h)").find("1h rollups"),
            std::string::npos);
  EXPECT_NE(
      TierLine("SELECT max(util) FROM gpu" + range + " GROUP BY time(15m)").find("5m rollups"),
      std::string::npos);
}

// Only the 1d tier keeps quantile sketches (storage::KeepsSketches): day
// buckets and longer come from them within 1% and say so; finer buckets are
// read from the raw points, exactly; a finer tier named in FROM is refused.
TEST_F(TierTest, QuantilesComeFromTheDayTiersSketchesAndFinerOnesFromRaw) {
  options_.tiers = {"5m", "1h", "1d"};
  Reopen();
  std::mt19937_64 rng(11);
  for (const char* node : {"n0", "n1", "n2"}) {
    for (int64_t t = kT0; t < kT0 + 2 * kDay; t += kMinute) {
      Write(node, t, static_cast<int64_t>(rng() % 101),
            std::exp(static_cast<double>(rng() % 1000) / 100));
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 2 * kDay) + "'";
  for (const char* fn : {"percentile(power, 95)", "p50(power)", "p99(power)", "median(power)",
                         "percentile(power, 0)", "percentile(power, 100)"}) {
    const std::string q = std::string("SELECT ") + fn + " FROM {m}" + range + " GROUP BY time(";
    ExpectTierEqualsRaw(q + "1d), sku", 0.0101);
    for (const char* bucket : {"5m", "1h", "3h"}) ExpectTierEqualsRaw(q + bucket + "), sku", 0);
  }
  QueryResult r = Run("SELECT p95(util) FROM gpu" + range + " GROUP BY time(1d)");
  ASSERT_EQ(r.statements[0].notes.size(), 1u);
  EXPECT_NE(r.statements[0].notes[0].find("approximate"), std::string::npos);
  EXPECT_NE(TierLine("SELECT p95(util) FROM gpu" + range + " GROUP BY time(1d)").find("1d rollups"),
            std::string::npos);
  r = Run("SELECT p95(util) FROM \"raw\".gpu" + range + " GROUP BY time(1d)");
  EXPECT_TRUE(r.statements[0].notes.empty());
  // An hour's quantile: raw, exact, no note; its max beside it still reads
  // the 1h tier when asked alone.
  r = Run("SELECT p95(util), max(util) FROM gpu" + range + " GROUP BY time(1h)");
  EXPECT_TRUE(r.statements[0].notes.empty());
  const std::string hourly = TierLine("SELECT p95(util) FROM gpu" + range + " GROUP BY time(1h)");
  EXPECT_NE(hourly.find("raw"), std::string::npos) << hourly;
  EXPECT_NE(hourly.find("sketches"), std::string::npos) << hourly;
  EXPECT_NE(TierLine("SELECT max(util) FROM gpu" + range + " GROUP BY time(1h)").find("1h rollups"),
            std::string::npos);
  for (const char* tier : {"5m", "1h"}) {
    QueryResult refused;
    ASSERT_TRUE(gpulse::Query(db_.get(),
                              std::string("SELECT p95(util) FROM \"") + tier + "\".gpu" + range +
                                  " GROUP BY time(1d)",
                              QueryOptions(), &refused)
                    .ok());
    ASSERT_EQ(refused.statements.size(), 1u);
    EXPECT_NE(refused.statements[0].status.message().find("only the 1d tier keeps"),
              std::string::npos)
        << refused.statements[0].status.ToString();
  }
}

// A day of NaN only: the tier rows count its points but a sketch does not,
// so no value can be ranked: the quantile is null (it used to read past the
// end of an empty list), and other aggregates still answer.
TEST_F(TierTest, AQuantileOfADayOfNaNIsNull) {
  for (int64_t t = kT0; t < kT0 + kDay; t += kMinute) Write("n0", t, 1, std::nan(""));
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + kDay) + "'";
  for (const char* fn : {"p95(power)", "median(power)"}) {
    QueryResult r =
        Run(std::string("SELECT ") + fn + ", count(util) FROM gpu" + range + " GROUP BY time(1d)");
    ASSERT_EQ(r.statements[0].series.size(), 1u) << fn;
    const auto& row = r.statements[0].series[0].values[0];
    EXPECT_TRUE(std::holds_alternative<std::monostate>(row[1])) << fn;
    EXPECT_EQ(row[2], QueryValue(int64_t{1440})) << fn;
  }
}

// A data directory written before rollup format 3 holds 1h blocks of the
// first format (sketches in every row, nanosecond units): it answers from
// them as before, and compaction writes them again in format 3, smaller and
// with the same answers.
TEST_F(TierTest, FirstFormatTierBlocksAnswerAsBeforeAndCompactionRewritesThem) {
  const Column util = test::FirstFormatPoints(FieldType::kInt);
  const Column power = test::FirstFormatPoints(FieldType::kFloat);
  for (size_t i = 0; i < util.size(); ++i) Write("n0", util.ts[i], util.ints[i], power.floats[i]);
  ASSERT_TRUE(db_->Flush().ok());
  // The 1h blocks as the old encoder wrote them for the same points.
  const auto tier_blocks = [&](const std::function<void(leveldb::DB*, const std::string& key,
                                                        const std::string& value)>& fn) {
    db_.reset();
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
    std::vector<std::pair<std::string, std::string>> found;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      storage::ChunkKeyParts k;
      if (storage::ParseChunkKey(it->key().ToString(), &k) && k.tier == storage::kTiers[1].id) {
        found.emplace_back(it->key().ToString(), it->value().ToString());
      }
    }
    it.reset();
    ASSERT_EQ(found.size(), 2u);  // util and power
    for (const auto& [key, value] : found) fn(store.get(), key, value);
  };
  tier_blocks([](leveldb::DB* store, const std::string& key, const std::string& value) {
    storage::RollupColumn rows;
    ASSERT_TRUE(storage::DecodeRollups(value, storage::kRollupAll, &rows).ok());
    const std::string old =
        rows.type == FieldType::kInt ? test::FirstFormatIntBlock() : test::FirstFormatFloatBlock();
    ASSERT_TRUE(store->Put(leveldb::WriteOptions(), key, old).ok());
  });
  // And the store's format version as that gpulse wrote it, with a damaged
  // first-format block of a field no query here reads.
  const std::string damaged_key =
      storage::ChunkKey(storage::kTiers[1].id, 0, 77, storage::WindowStart(kT0, 288 * kHour));
  const std::string damaged("\x01\x00\x02\x09garbage", 11);
  EXPECT_EQ(MakeOlderStore(5, [](const std::string&) { return false; }), 0u);
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    ASSERT_TRUE(store->Put(leveldb::WriteOptions(), damaged_key, damaged).ok());
  }
  Reopen();
  const std::string q =
      "SELECT count(util), sum(util), min(util), max(util), first(util), last(util), "
      "mean(power), max(power), first(power), last(power) FROM {m} WHERE time >= '" +
      Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 3 * kHour) + "' GROUP BY time(1h)";
  EXPECT_NE(TierLine(With(q, "gpu")).find("1h rollups"), std::string::npos);
  ExpectTierEqualsRaw(q);
  // Compaction writes them again, and copies the damaged one as it is.
  ASSERT_TRUE(db_->Compact().ok());
  ExpectTierEqualsRaw(q);
  {
    db_.reset();
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    std::string version, copied;
    ASSERT_TRUE(store->Get(leveldb::ReadOptions(), storage::VersionKey(), &version).ok());
    ASSERT_EQ(version.size(), 4u);
    EXPECT_EQ(storage::GetU32BE(version.data()),
              storage::kFormatVersion);  // opened, so no older gpulse reads it
    ASSERT_TRUE(store->Get(leveldb::ReadOptions(), damaged_key, &copied).ok());
    EXPECT_EQ(copied, damaged);
    ASSERT_TRUE(store->Delete(leveldb::WriteOptions(), damaged_key).ok());
  }
  tier_blocks([](leveldb::DB*, const std::string&, const std::string& value) {
    EXPECT_EQ(value[0], 4);
    EXPECT_FALSE(storage::IsOlderFormatRollupBlock(value));
    EXPECT_LT(value.size(), test::FirstFormatFloatBlock().size());
    storage::RollupColumn rows;
    ASSERT_TRUE(storage::DecodeRollups(value, storage::kRollupAll, &rows).ok());
    ASSERT_EQ(rows.size(), 3u);
    for (const storage::Sketch& s : rows.sketch) EXPECT_TRUE(s.empty());  // the 1h tier keeps none
  });
}

TEST_F(TierTest, LatePointsAndReplacedValuesUpdateEveryTierAcrossRestarts) {
  for (const char* node : {"n0", "n1"}) {
    for (int64_t t = kT0; t < kT0 + kDay; t += 2 * kMinute) Write(node, t, 10, 1.5);
  }
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + kDay) + "'";
  const std::string q =
      "SELECT count(util), sum(util), min(util), max(util), first(power), "
      "last(power), mean(power) FROM {m}" +
      range + " GROUP BY time(";
  // Late points between stored ones, a point before the first of its
  // bucket, and replaced values (same time, new value), in three flushes.
  for (int round = 0; round < 3; ++round) {
    for (int64_t t = kT0 + kMinute; t < kT0 + kDay; t += 37 * kMinute)
      Write("n0", t, 90 + round, 7.5);
    for (int64_t t = kT0; t < kT0 + kDay; t += 53 * kMinute) Write("n1", t, -round, 0.25 * round);
    ASSERT_TRUE(db_->Flush().ok());
    for (const char* b : {"5m", "1h", "1d"}) ExpectTierEqualsRaw(q + b + "), node");
  }
  Reopen();
  for (const char* b : {"5m", "1h", "1d"}) ExpectTierEqualsRaw(q + b + "), node");
  // The replaced values are the ones counted: n1's last round wrote -2.
  QueryResult r = Run("SELECT min(util) FROM gpu" + range + " AND node = 'n1' GROUP BY time(1d)");
  ASSERT_EQ(r.statements[0].series.size(), 1u);
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{-2}));
}

TEST_F(TierTest, UnflushedPointsCountInTierAnswers) {
  for (int64_t t = kT0; t < kT0 + kDay; t += kMinute) Write("n0", t, 5, 1);
  ASSERT_TRUE(db_->Flush().ok());
  // In the head only: a replacement, a late point and new points.
  Write("n0", kT0 + 10 * kMinute, 500, 2);
  Write("n0", kT0 + 10 * kMinute + 1, 7, 3);
  for (int64_t t = kT0 + kDay; t < kT0 + kDay + kHour; t += kMinute) Write("n0", t, 9, 4);
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 2 * kDay) + "'";
  for (const char* b : {"5m", "1h", "1d"}) {
    ExpectTierEqualsRaw(
        std::string("SELECT count(util), sum(util), max(util), last(power) FROM {m}") + range +
        " GROUP BY time(" + b + ")");
  }
  QueryResult r = Run("SELECT max(util), count(util) FROM gpu" + range + " GROUP BY time(1d)");
  ASSERT_EQ(r.statements[0].series.size(), 1u);
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{500}));
  EXPECT_EQ(r.statements[0].series[0].values[0][2], QueryValue(int64_t{1441}));
  EXPECT_EQ(r.statements[0].series[0].values[1][2], QueryValue(int64_t{60}));
}

TEST_F(TierTest, ManySeriesWithGapsTagFiltersAndUnflushedPointsFoldLikeRaw) {
  // 40 series: a query reads them a chunk at a time (query/exec/select.cc), so
  // a filter that drops series in the middle of a chunk, groups that change
  // within one, whole hours and days without rows (a tier block with gaps)
  // and series with unflushed points among flushed ones all come up.
  std::mt19937_64 rng(11);
  for (int n = 0; n < 40; ++n) {
    char node[16];
    std::snprintf(node, sizeof node, "n%02d", n);
    for (int64_t hour = 0; hour < 72; ++hour) {
      if (rng() % 5 == 0 || (n % 7 == 3 && hour / 24 == 1)) continue;
      for (int64_t t = kT0 + hour * kHour; t < kT0 + (hour + 1) * kHour; t += 5 * kMinute) {
        Write(node, t, static_cast<int64_t>(rng() % 101), static_cast<double>(rng() % 1000) / 8);
      }
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  for (int n = 0; n < 40; n += 9) {  // unflushed: new points, a replacement
    char node[16];
    std::snprintf(node, sizeof node, "n%02d", n);
    Write(node, kT0 + 2 * kDay + 7 * kMinute, 3, 1.5);
    Write(node, kT0 + 30 * kMinute, 99, 2.5);
  }
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 3 * kDay) + "'";
  const std::string filter = " AND node != 'n05' AND node !~ /n1[23]/";
  for (const char* bucket : {"5m", "1h", "1h, 30m", "1d"}) {
    for (const char* by : {"sku", "node"}) {
      for (const char* where : {"", " AND node != 'n05' AND node !~ /n1[23]/"}) {
        ExpectTierEqualsRaw(
            "SELECT count(util), sum(util), mean(power), min(util), max(power), first(util), "
            "last(power), spread(util) FROM {m}" +
            range + where + " GROUP BY time(" + bucket + "), " + by);
      }
    }
  }
  ExpectTierEqualsRaw("SELECT mean(util), max(power) FROM {m}" + range + filter);
}

TEST_F(TierTest, RollupsOfManySeriesAtOnceAreEachSeriesRows) {
  for (const char* node : {"n0", "n1", "n2"}) {
    for (int64_t t = kT0; t < kT0 + 2 * kDay; t += 7 * kMinute) {
      if (std::string(node) == "n1" && t < kT0 + kDay) continue;  // a day later
      Write(node, t, (t / kMinute) % 90, 1);
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  Write("n2", kT0 + kDay + 3 * kMinute, 1000, 1);  // unflushed, among stored rows
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db_->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), 3u);
  const std::vector<std::string> fields = {"util", "nope"};
  // (series, bucket) -> (count, max) as one call gives them, and as one call
  // a series does.
  using Rows = std::map<std::pair<size_t, int64_t>, std::pair<uint64_t, int64_t>>;
  Rows together, alone;
  const auto put = [](Rows* into, size_t s, const RollupColumn& r, size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      auto [it, fresh] = into->try_emplace({s, r.bucket[i]}, r.count[i], r.max.ints[i]);
      EXPECT_TRUE(fresh) << "bucket " << r.bucket[i] << " twice";
    }
  };
  for (size_t tier = 0; tier < storage::kTierCount; ++tier) {
    together.clear();
    alone.clear();
    // A reversed order: rows come back by position, not by id.
    const std::vector<SeriesId> order = {ids[2], ids[0], ids[1]};
    ASSERT_TRUE(
        db_->ScanRollups(order, fields, tier, kT0, kT0 + 2 * kDay, storage::kRollupAll,
                         [&](size_t s, size_t f, const RollupColumn& r, size_t b, size_t e) {
                           EXPECT_EQ(f, 0u);
                           put(&together, s, r, b, e);
                         })
            .ok());
    for (size_t s = 0; s < order.size(); ++s) {
      const size_t at =
          static_cast<size_t>(std::find(ids.begin(), ids.end(), order[s]) - ids.begin());
      ASSERT_TRUE(db_->ScanRollups(series[at], fields, tier, kT0, kT0 + 2 * kDay,
                                   storage::kRollupAll,
                                   [&](size_t, const RollupColumn& r, size_t b, size_t e) {
                                     put(&alone, s, r, b, e);
                                   })
                      .ok());
    }
    EXPECT_EQ(together, alone) << storage::kTiers[tier].name;
    EXPECT_FALSE(together.empty());
  }
  // n2's day-two 1d row counts its unflushed point: 206 stored + 1.
  together.clear();
  ASSERT_TRUE(db_->ScanRollups(std::vector<SeriesId>{ids[2]}, fields, 2, kT0, kT0 + 2 * kDay,
                               storage::kRollupAll,
                               [&](size_t s, size_t, const RollupColumn& r, size_t b, size_t e) {
                                 put(&together, s, r, b, e);
                               })
                  .ok());
  ASSERT_EQ(together.size(), 2u);
  EXPECT_EQ(together.at({0, kT0 + kDay}).second, 1000);
  EXPECT_EQ(together.at({0, kT0 + kDay}).first, together.at({0, kT0}).first + 1);
  const Status bad = db_->ScanRollups(std::vector<SeriesId>{ids[0], 12345}, fields, 1, kT0,
                                      kT0 + kDay, storage::kRollupAll,
                                      [](size_t, size_t, const RollupColumn&, size_t, size_t) {});
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
  EXPECT_NE(bad.message().find("12345"), std::string::npos);
}

TEST_F(TierTest, ABlockReadBeforeItHadRowsIsReadAgainOnceAFlushWritesIt) {
  // Day one stored; days two and three asked for from the 5m tier (a block
  // a day), so their absent blocks are remembered by the read cache.
  for (int64_t t = kT0; t < kT0 + kDay; t += kMinute) Write("n0", t, 5, 1);
  ASSERT_TRUE(db_->Flush().ok());
  const std::string q = "SELECT count(util), max(util) FROM {m} WHERE time >= '" + Rfc(kT0) +
                        "' AND time < '" + Rfc(kT0 + 3 * kDay) + "' GROUP BY time(1h)";
  const QueryResult before = Run(With(q, "\"5m\".gpu"));
  ASSERT_EQ(before.statements[0].series.size(), 1u);
  EXPECT_EQ(before.statements[0].series[0].values.size(), 72u);  // FILL(null) rows after day one
  EXPECT_EQ(before.statements[0].series[0].values[30][1], QueryValue(std::monostate{}));
  // Day two written and flushed: its block now exists and must be read.
  for (int64_t t = kT0 + kDay; t < kT0 + 2 * kDay; t += kMinute) Write("n0", t, 9, 1);
  ASSERT_TRUE(db_->Flush().ok());
  const QueryResult after = Run(With(q, "\"5m\".gpu"));
  ASSERT_EQ(after.statements[0].series.size(), 1u);
  EXPECT_EQ(after.statements[0].series[0].values[30][1], QueryValue(int64_t{60}));
  EXPECT_EQ(after.statements[0].series[0].values[30][2], QueryValue(int64_t{9}));
  ExpectTierEqualsRaw(q);
}

TEST_F(TierTest, ThePlannerSaysWhyAndAForcedTierMustFit) {
  for (int64_t t = kT0; t < kT0 + kDay; t += kMinute) Write("n0", t, 5, 1);
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + kDay) + "'";
  // A range off the grid: whole hours from the tier, the ends raw; a range
  // mostly off the grid of every tier: raw. Field conditions and raw-only
  // functions: raw.
  EXPECT_NE(TierLine("SELECT mean(util) FROM gpu WHERE time >= '" + Rfc(kT0 + kMinute) +
                     "' AND time < '" + Rfc(kT0 + kDay) + "' GROUP BY time(1h)")
                .find("1h rollups"),
            std::string::npos);
  EXPECT_NE(TierLine("SELECT mean(util) FROM gpu WHERE time >= '" + Rfc(kT0 + kMinute) +
                     "' AND time < '" + Rfc(kT0 + 20 * kMinute) + "' GROUP BY time(10m)")
                .find("tier: raw"),
            std::string::npos);
  EXPECT_NE(TierLine("SELECT mean(util) FROM gpu" + range + " AND power > 0 GROUP BY time(1h)")
                .find("names a field"),
            std::string::npos);
  EXPECT_NE(
      TierLine("SELECT stddev(util) FROM gpu" + range + " GROUP BY time(1h)").find("tier: raw"),
      std::string::npos);
  EXPECT_NE(TierLine("SELECT mean(util) FROM gpu" + range + " GROUP BY time(1m)").find("tier: raw"),
            std::string::npos);
  // A lone max() without GROUP BY time answers its point's time: raw.
  EXPECT_NE(TierLine("SELECT max(util) FROM gpu" + range).find("own time"), std::string::npos);
  // Forcing: a tier that fits is used; one that does not is an error.
  EXPECT_NE(TierLine("SELECT mean(util) FROM \"5m\".gpu" + range + " GROUP BY time(1h)")
                .find("5m rollups"),
            std::string::npos);
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(db_.get(),
                            "SELECT mean(util) FROM \"1h\".gpu" + range + " GROUP BY time(5m)",
                            QueryOptions(), &r)
                  .ok());
  EXPECT_NE(r.statements[0].status.message().find("tier 1h cannot answer"), std::string::npos)
      << r.statements[0].status.ToString();
  r = QueryResult();
  ASSERT_TRUE(
      gpulse::Query(db_.get(), "SELECT mean(util) FROM \"weekly\".gpu" + range, QueryOptions(), &r)
          .ok());
  EXPECT_NE(r.statements[0].status.message().find("no tier (retention policy) named \"weekly\""),
            std::string::npos)
      << r.statements[0].status.ToString();
  // autogen is the automatic choice.
  EXPECT_NE(TierLine("SELECT mean(util) FROM \"autogen\".gpu" + range + " GROUP BY time(1h)")
                .find("1h rollups"),
            std::string::npos);
}

TEST_F(TierTest, AStoreFromBeforeTiersGetsThemBuiltWhenOpened) {
  std::mt19937_64 rng(3);
  for (const char* node : {"n0", "n1"}) {
    for (int64_t t = kT0; t < kT0 + 2 * kDay; t += kMinute) {
      Write(node, t, static_cast<int64_t>(rng() % 100), static_cast<double>(rng() % 1000) / 10);
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  // A version 2 store: no tier blocks.
  EXPECT_GT(MakeOlderStore(2, [](const std::string&) { return true; }), 0u);
  Reopen();
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 2 * kDay) + "'";
  for (const char* b : {"5m", "1h", "1d"}) {
    ExpectTierEqualsRaw(std::string("SELECT count(util), sum(util), max(power), first(util) "
                                    "FROM {m}") +
                        range + " GROUP BY time(" + b + "), node");
  }
  EXPECT_NE(
      TierLine("SELECT count(util) FROM gpu" + range + " GROUP BY time(1d)").find("1d rollups"),
      std::string::npos);
  // And the count is that of the raw points, not zero.
  QueryResult r = Run("SELECT count(util) FROM gpu" + range + " GROUP BY time(1d)");
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{2 * 1440}));
}

TEST_F(TierTest, AStoreFromBeforeTalliesGetsThemBuiltWhenOpened) {
  for (int64_t t = kT0; t < kT0 + 2 * kDay; t += kMinute) {
    Point p{
        "gpu", {{"node", "n0"}}, {{"util", int64_t{1}}, {"team", t < kT0 + kDay ? "a" : "b"}}, t};
    ASSERT_TRUE(db_->Write({p}).ok());
  }
  ASSERT_TRUE(db_->Flush().ok());
  // A version 4 store: tier blocks of numeric fields only.
  EXPECT_GT(MakeOlderStore(4, [](const std::string& v) { return storage::IsTallyBlock(v); }), 0u);
  Reopen();
  const std::string q = "SELECT count(team) FROM {m} WHERE time >= '" + Rfc(kT0) +
                        "' AND time < '" + Rfc(kT0 + 2 * kDay) + "' GROUP BY team, time(1d)";
  ExpectTierEqualsRaw(q);
  EXPECT_NE(TierLine(With(q, "gpu")).find("1d tallies"), std::string::npos);
  QueryResult r = Run(With(q, "gpu"));
  ASSERT_EQ(r.statements[0].series.size(), 2u);
  EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{1440}));
}

TEST_F(TierTest, ChangingTheTierSetDropsAndBuildsTiersAtOpen) {
  std::mt19937_64 rng(5);
  for (int64_t t = kT0; t < kT0 + 2 * kDay; t += kMinute) {
    Write("n0", t, static_cast<int64_t>(rng() % 100), static_cast<double>(rng() % 1000) / 8);
  }
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 2 * kDay) + "'";
  const std::string q = "SELECT count(util), sum(util), max(power), last(util) FROM {m}" + range;

  options_.tiers = {"1h"};
  Reopen();
  EXPECT_EQ(db_->KeptTiers(), 2u);
  EXPECT_NE(TierLine(With(q, "gpu") + " GROUP BY time(1d)").find("1h rollups"), std::string::npos);
  EXPECT_NE(TierLine(With(q, "gpu") + " GROUP BY time(15m)").find("tier: raw"), std::string::npos);
  QueryResult r;
  ASSERT_TRUE(
      gpulse::Query(db_.get(), With(q, "\"5m\".gpu") + " GROUP BY time(15m)", QueryOptions(), &r)
          .ok());
  EXPECT_NE(r.statements[0].status.message().find("tier 5m is not kept"), std::string::npos)
      << r.statements[0].status.ToString();
  ExpectTierEqualsRaw(q + " GROUP BY time(1d)");
  // Points written while 5m is not kept: the rebuilt 5m tier has them.
  Write("n0", kT0 + 7 * kMinute + 1, 1000, 1);

  options_.tiers = {"5m", "1h", "1d"};
  Reopen();
  EXPECT_EQ(db_->KeptTiers(), 7u);
  for (const char* b : {"15m", "1h", "1d"}) ExpectTierEqualsRaw(q + " GROUP BY time(" + b + ")");
  EXPECT_NE(TierLine(With(q, "gpu") + " GROUP BY time(15m)").find("5m rollups"), std::string::npos);

  options_.tiers = {"1w"};
  db_.reset();
  const Status s = Db::Open(options_, dir_.path(), &db_);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("unknown tier \"1w\""), std::string::npos) << s.ToString();
}

// Attribution columns (string fields): "GPU-minutes per team per day" is
// count(team) GROUP BY team, time(1d), and the tiers' tallies answer it
// exactly as the raw points do, through late points, replaced values,
// unflushed points, deletes and restarts.
TEST_F(TierTest, TalliesCountAStringFieldPerValueLikeRaw) {
  std::mt19937_64 rng(5);
  const char* const teams[] = {"fraud", "search", "ads", "vision", "speech"};
  auto write = [&](const std::string& node, int64_t ts, const std::string& team) {
    Point p{"gpu", {{"node", node}}, {{"util", int64_t{1}}, {"team", team}}, ts};
    ASSERT_TRUE(db_->Write({p}).ok());
  };
  // Three days of minutes; each node runs one team's job for hours at a time.
  for (const char* node : {"n0", "n1", "n2"}) {
    std::string team = teams[rng() % 5];
    for (int64_t t = kT0; t < kT0 + 3 * kDay; t += kMinute) {
      if (rng() % 200 == 0) team = teams[rng() % 5];
      if (rng() % 9 != 0) write(node, t, team);
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  const std::string range =
      " WHERE time >= '" + Rfc(kT0) + "' AND time < '" + Rfc(kT0 + 3 * kDay) + "'";
  const std::string per_day = "SELECT count(team) FROM {m}" + range + " GROUP BY team, time(1d)";
  const std::string per_hour =
      "SELECT count(team) FROM {m}" + range + " GROUP BY node, team, time(1h)";
  const std::string whole = "SELECT count(team) FROM {m}" + range + " GROUP BY team";
  auto check = [&](const std::string& when) {
    SCOPED_TRACE(when);
    for (const std::string& q : {per_day, per_hour, whole}) ExpectTierEqualsRaw(q);
    EXPECT_NE(TierLine(With(per_day, "gpu")).find("tallies"), std::string::npos)
        << TierLine(With(per_day, "gpu"));
  };
  check("flushed");
  // Late points among stored ones, and replaced values: those buckets are
  // counted again from raw.
  write("n0", kT0 + 30 * kMinute, "late-team");
  write("n1", kT0 + kDay + 60 * kMinute, "replaced");
  check("late and replaced, unflushed");
  ASSERT_TRUE(db_->Flush().ok());
  check("late and replaced, flushed");
  const std::vector<Series> n2{Series{"gpu", {{"node", "n2"}}}};
  ASSERT_TRUE(db_->Delete(n2, kT0 + 10 * kHour + 5 * kMinute, kT0 + kDay + 3 * kHour).ok());
  check("after a delete");
  Reopen();
  check("reopened");
  // A range off the tier's grid needs the rows: raw answers.
  EXPECT_EQ(TierLine("SELECT count(team) FROM gpu WHERE time >= '" + Rfc(kT0 + kMinute) +
                     "' AND time < '" + Rfc(kT0 + kDay) + "' GROUP BY team")
                .find("tallies"),
            std::string::npos);
}

TEST(TierDefaultsTest, TheDefaultTiersAreHourAndDay) {
  storage::ScratchDir dir;
  Options options;
  options.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  EXPECT_EQ(db->KeptTiers(), 0b110u);  // 1h and 1d, not 5m
}

}  // namespace
}  // namespace gpulse
