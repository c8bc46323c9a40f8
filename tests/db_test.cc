// The embedding API end to end: writes, reads, last-write-wins in the head,
// in chunks and across restarts, partial writes, listings, the directory
// lock, and concurrent writers and readers.

#include <gtest/gtest.h>

#include <cstring>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "engine/gpulse.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kMinute;

Point GpuPoint(const std::string& node, int gpu, int64_t ts, FieldValue util) {
  Point p;
  p.measurement = "gpu";
  p.tags = {{"node", node}, {"gpu", std::to_string(gpu)}};
  p.fields = {{"util", std::move(util)}};
  p.timestamp_ns = ts;
  return p;
}

class DbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    Reopen();
  }

  void Reopen() {
    db_.reset();
    ASSERT_TRUE(Db::Open(options_, dir_.path(), &db_).ok());
  }

  // The (ts, value) pairs of `field` of the series with node=`node`, gpu=`gpu`.
  std::vector<std::pair<int64_t, int64_t>> ReadInts(const std::string& node, int gpu,
                                                    int64_t start = INT64_MIN,
                                                    int64_t end = INT64_MAX) {
    ReadRequest r;
    r.measurement = "gpu";
    r.field = "util";
    r.tags = {{"node", node}, {"gpu", std::to_string(gpu)}};
    r.start_ns = start;
    r.end_ns = end;
    std::vector<SeriesColumn> out;
    EXPECT_TRUE(db_->Read(r, &out).ok());
    std::vector<std::pair<int64_t, int64_t>> points;
    for (const SeriesColumn& c : out) {
      for (size_t i = 0; i < c.column.size(); ++i) {
        points.emplace_back(c.column.ts[i], c.column.ints[i]);
      }
    }
    return points;
  }

  // Hour-long chunk windows, and minutes 0 .. n-1 of node n1's GPU 0
  // (util = the minute) written and flushed.
  void WriteFlushedMinutes(int n) {
    options_.chunk_window = std::chrono::hours(1);
    Reopen();
    std::vector<Point> batch;
    for (int m = 0; m < n; ++m) batch.push_back(GpuPoint("n1", 0, m * kMinute, int64_t{m}));
    ASSERT_TRUE(db_->Write(batch).ok());
    ASSERT_TRUE(db_->Flush().ok());
  }

  storage::ScratchDir dir_;
  Options options_;
  std::unique_ptr<Db> db_;
};

// A measurement's catalog version changes with its own series and fields,
// and only with them; values are never reused, not even by another Db.
TEST_F(DbTest, CatalogVersionsFollowEachMeasurementsCatalog) {
  const auto version = [&](Db* db, const std::string& m) {
    uint64_t v = 0;
    const Status s = db->CatalogVersion(m, &v);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return v;
  };
  const uint64_t never = version(db_.get(), "gpu");
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{1})}).ok());
  const uint64_t v1 = version(db_.get(), "gpu");
  EXPECT_NE(v1, never);
  // A point of a known series and field changes nothing.
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 2 * kMinute, int64_t{2})}).ok());
  EXPECT_EQ(version(db_.get(), "gpu"), v1);
  // Another measurement's series and fields leave gpu's version alone.
  Point other = GpuPoint("n1", 0, kMinute, int64_t{1});
  other.measurement = "host";
  ASSERT_TRUE(db_->Write({other}).ok());
  EXPECT_EQ(version(db_.get(), "gpu"), v1);
  const uint64_t host = version(db_.get(), "host");
  EXPECT_NE(host, v1);
  // A new series, a new field, a drop and a revival each change it.
  ASSERT_TRUE(db_->Write({GpuPoint("n2", 0, kMinute, int64_t{1})}).ok());
  const uint64_t v2 = version(db_.get(), "gpu");
  EXPECT_NE(v2, v1);
  Point temp = GpuPoint("n1", 0, 3 * kMinute, int64_t{1});
  temp.fields = {{"temp", 60.0}};
  ASSERT_TRUE(db_->Write({temp}).ok());
  const uint64_t v3 = version(db_.get(), "gpu");
  EXPECT_NE(v3, v2);
  std::vector<Series> n2;
  ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n2"}}, &n2).ok());
  ASSERT_TRUE(db_->DropSeries(n2).ok());
  const uint64_t v4 = version(db_.get(), "gpu");
  EXPECT_NE(v4, v3);
  ASSERT_TRUE(db_->Write({GpuPoint("n2", 0, 5 * kMinute, int64_t{1})}).ok());
  const uint64_t v5 = version(db_.get(), "gpu");
  EXPECT_NE(v5, v4);
  EXPECT_EQ(version(db_.get(), "host"), host);
  // A measurement never written has a version that moves with any change.
  const uint64_t none = version(db_.get(), "nothing");
  other.tags = {{"node", "n9"}};
  ASSERT_TRUE(db_->Write({other}).ok());
  EXPECT_NE(version(db_.get(), "nothing"), none);
  // The same history in a Db opened again, or in another, gives new values.
  const std::vector<uint64_t> seen = {never, v1, v2, v3, v4, v5, host, none};
  Reopen();
  const uint64_t reopened = version(db_.get(), "gpu");
  for (uint64_t v : seen) EXPECT_NE(reopened, v);
  {
    storage::ScratchDir other_dir;
    std::unique_ptr<Db> again;
    for (int open = 0; open < 2; ++open) {  // written, then opened from disk
      again.reset();
      ASSERT_TRUE(Db::Open(options_, other_dir.path(), &again).ok());
      if (open == 0) {
        ASSERT_TRUE(again->Write({GpuPoint("n1", 0, kMinute, int64_t{1})}).ok());
      }
      EXPECT_NE(version(again.get(), "gpu"), version(db_.get(), "gpu"));
    }
  }
  ASSERT_TRUE(db_->Close().ok());
  uint64_t ignored = 0;
  EXPECT_FALSE(db_->CatalogVersion("gpu", &ignored).ok());
}

// A measurement's data version of a time range changes when a point in a
// ten-minute slice the range meets is written or any of its points deleted,
// and only then; values are new to the Db (a reader may keep what it derived
// from a range while they hold).
TEST_F(DbTest, DataVersionsFollowEachMeasurementsTenMinuteSlices) {
  constexpr int64_t kSlice = 10 * kMinute, kHour = 60 * kMinute;
  const int64_t h0 = 480000 * kHour, h1 = h0 + kSlice;
  const auto version = [&](const std::string& m, int64_t from, int64_t to) {
    return db_->DataVersion(m, from, to);
  };
  const uint64_t never = version("gpu", h0, h1);
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, h0 + 5 * kMinute, int64_t{1})}).ok());
  const uint64_t a = version("gpu", h0, h1);
  EXPECT_NE(a, never);
  EXPECT_EQ(version("gpu", h0 + 9 * kMinute, h0 + 9 * kMinute + 1), a);  // any part of the slice
  EXPECT_EQ(version("gpu", h0 - 5 * kHour, h0 + 1), a);                  // a range that meets it
  EXPECT_EQ(version("gpu", h0 - 5 * kHour, h0), never);  // ... and one that does not
  EXPECT_EQ(version("gpu", h1, h0 + kHour), never);      // nor the rest of the hour
  const uint64_t b = version("gpu", h1, h1 + kSlice);
  const uint64_t host = version("host", h0, h1);
  // A point of the next slice, or of another measurement, leaves the slice alone.
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, h1 + kMinute, int64_t{2})}).ok());
  EXPECT_EQ(version("gpu", h0, h1), a);
  EXPECT_NE(version("gpu", h1, h1 + kSlice), b);
  EXPECT_NE(version("gpu", h0, h1 + kSlice), a);  // a range over both
  Point other = GpuPoint("n1", 0, h0, int64_t{1});
  other.measurement = "host";
  ASSERT_TRUE(db_->Write({other}).ok());
  EXPECT_EQ(version("gpu", h0, h1), a);
  EXPECT_NE(version("host", h0, h1), host);
  // A late point of the slice, an overwrite with the same timestamp, a flush
  // that changes nothing, a delete.
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, h0 + 5 * kMinute, int64_t{7})}).ok());
  const uint64_t c = version("gpu", h0, h1);
  EXPECT_NE(c, a);
  ASSERT_TRUE(db_->Flush().ok());
  EXPECT_EQ(version("gpu", h0, h1), c);
  std::vector<Series> gpus;
  ASSERT_TRUE(db_->ListSeries("gpu", {}, &gpus).ok());
  const uint64_t far = version("gpu", h1 + 100 * kHour, h1 + 101 * kHour);
  ASSERT_TRUE(db_->Delete(gpus, h1, h1 + kMinute).ok());
  EXPECT_NE(version("gpu", h0, h1), c);  // deletes move every slice of it
  EXPECT_NE(version("gpu", h1 + 100 * kHour, h1 + 101 * kHour), far);
  // A Db opened again starts afresh.
  const uint64_t last = version("gpu", h0, h1);
  Reopen();
  EXPECT_NE(version("gpu", h0, h1), last);
  EXPECT_NE(version("gpu", h0, h1), a);
  // The first and the last slices a point may be in.
  const uint64_t first = version("gpu", INT64_MIN, INT64_MIN + 1);
  const uint64_t final_hour = version("gpu", kMaxTimestampNs, INT64_MAX);
  ASSERT_TRUE(db_->Write({GpuPoint("n4", 0, INT64_MIN, int64_t{1}),
                          GpuPoint("n4", 0, kMaxTimestampNs, int64_t{1})})
                  .ok());
  EXPECT_NE(version("gpu", INT64_MIN, INT64_MIN + 1), first);
  EXPECT_NE(version("gpu", kMaxTimestampNs, INT64_MAX), final_hour);
  // Writes over more slices than it keeps apart still move each slice's version.
  std::vector<Point> spread;
  for (int64_t h = 0; h < 132000; ++h) spread.push_back(GpuPoint("n3", 0, h * kSlice, int64_t{1}));
  const uint64_t old = version("gpu", 100 * kHour, 101 * kHour);
  ASSERT_TRUE(db_->Write(spread).ok());
  EXPECT_NE(version("gpu", 100 * kHour, 101 * kHour), old);
  const uint64_t settled = version("gpu", 100 * kHour, 101 * kHour);
  ASSERT_TRUE(db_->Write({GpuPoint("n3", 0, 131999 * kSlice + 1, int64_t{2})}).ok());
  EXPECT_EQ(version("gpu", 100 * kHour, 101 * kHour), settled);
}

TEST_F(DbTest, WriteThenReadInOrder) {
  std::vector<Point> batch;
  for (int m = 0; m < 10; ++m) batch.push_back(GpuPoint("n1", 0, m * kMinute, int64_t{m}));
  ASSERT_TRUE(db_->Write(batch).ok());
  const auto points = ReadInts("n1", 0);
  ASSERT_EQ(points.size(), 10u);
  for (int m = 0; m < 10; ++m) EXPECT_EQ(points[m], std::make_pair(m * kMinute, int64_t{m}));
  EXPECT_EQ(ReadInts("n1", 0, 3 * kMinute, 5 * kMinute).size(), 2u);
}

TEST_F(DbTest, LastWriteWinsInHeadChunksAndAcrossRestart) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{1})}).ok());
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{2})}).ok());
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 2}}));

  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{3})}).ok());
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 3}}));

  ASSERT_TRUE(db_->Flush().ok());  // merges into the existing chunk
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 3}}));

  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{4})}).ok());
  Reopen();  // Close flushed it
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 4}}));
}

TEST_F(DbTest, OutOfOrderPointsAreSortedAndDeduplicated) {
  std::vector<Point> batch;
  for (int m : {5, 1, 3, 1, 4, 2}) batch.push_back(GpuPoint("n1", 0, m * kMinute, int64_t{m * 10}));
  batch.push_back(GpuPoint("n1", 0, 3 * kMinute, int64_t{99}));
  ASSERT_TRUE(db_->Write(batch).ok());
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {kMinute, 10}, {2 * kMinute, 20}, {3 * kMinute, 99}, {4 * kMinute, 40}, {5 * kMinute, 50}};
  EXPECT_EQ(ReadInts("n1", 0), want);
  ASSERT_TRUE(db_->Flush().ok());
  EXPECT_EQ(ReadInts("n1", 0), want);
}

TEST_F(DbTest, ReplayRestoresUnflushedPoints) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{7})}).ok());
  // Simulate a crash: the process exits without Close, so nothing is flushed;
  // the WAL (written to the OS even under kNone) must bring the point back.
  std::filesystem::copy(dir_.path(), dir_.path() + "-copy",
                        std::filesystem::copy_options::recursive);
  std::filesystem::remove(dir_.path() + "-copy/LOCK");
  std::unique_ptr<Db> copy;
  ASSERT_TRUE(Db::Open(options_, dir_.path() + "-copy", &copy).ok());
  ReadRequest r{"gpu", {}, "util"};
  std::vector<SeriesColumn> out;
  ASSERT_TRUE(copy->Read(r, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].column.ints, std::vector<int64_t>{7});
  copy.reset();
  std::filesystem::remove_all(dir_.path() + "-copy");
}

TEST_F(DbTest, PartialWriteKeepsGoodPoints) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 0, int64_t{1})}).ok());
  Point no_fields = GpuPoint("n1", 1, 0, int64_t{1});
  no_fields.fields.clear();
  Point dup_tag = GpuPoint("n1", 2, 0, int64_t{1});
  dup_tag.tags.push_back({"node", "n2"});
  std::vector<Point> batch = {GpuPoint("n1", 3, 0, int64_t{5}), no_fields,
                              GpuPoint("n1", 4, 0, 5.0),  // util is an integer field
                              dup_tag, GpuPoint("n1", 5, 0, int64_t{6})};
  WriteResult result;
  const Status s = db_->Write(batch, &result);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("point 1"), std::string::npos) << s.message();
  ASSERT_EQ(result.rejected.size(), 3u);
  EXPECT_EQ(result.rejected[0].index, 1u);
  EXPECT_EQ(result.rejected[1].index, 2u);
  EXPECT_NE(result.rejected[1].reason.find("integer"), std::string::npos);
  EXPECT_EQ(result.rejected[2].index, 3u);
  EXPECT_EQ(result.points_written, 2u);
  EXPECT_EQ(ReadInts("n1", 3).size(), 1u);
  EXPECT_EQ(ReadInts("n1", 5).size(), 1u);
  EXPECT_TRUE(ReadInts("n1", 4).empty());
}

TEST_F(DbTest, OutOfOrderWindowRejectsTooOldPoints) {
  options_.out_of_order_window = std::chrono::hours(1);
  Reopen();
  const int64_t now = 1000 * kMinute;
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, now, int64_t{1})}).ok());
  EXPECT_TRUE(db_->Write({GpuPoint("n1", 0, now - 30 * kMinute, int64_t{2})}).ok());
  WriteResult result;
  EXPECT_TRUE(
      db_->Write({GpuPoint("n1", 0, now - 61 * kMinute, int64_t{3})}, &result).IsInvalidArgument());
  ASSERT_EQ(result.rejected.size(), 1u);
  EXPECT_NE(result.rejected[0].reason.find("out-of-order window"), std::string::npos);
  // Another series has its own newest point.
  EXPECT_TRUE(db_->Write({GpuPoint("n2", 0, now - 61 * kMinute, int64_t{3})}).ok());
}

TEST_F(DbTest, AllFieldTypesRoundTrip) {
  Point p;
  p.measurement = "job";
  p.tags = {{"node", "n1"}};
  p.fields = {{"f", 1.5},
              {"i", int64_t{-3}},
              {"u", uint64_t{UINT64_MAX}},
              {"b", true},
              {"s", std::string("train-llm")}};
  p.timestamp_ns = -5;  // before the epoch is allowed
  ASSERT_TRUE(db_->Write({p}).ok());
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<FieldInfo> fields;
    ASSERT_TRUE(db_->ListFields("job", &fields).ok());
    ASSERT_EQ(fields.size(), 5u);
    EXPECT_EQ(fields[0].name, "b");
    EXPECT_EQ(fields[0].type, FieldType::kBool);
    std::vector<SeriesColumn> out;
    ASSERT_TRUE(db_->Read({"job", {}, "s"}, &out).ok());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].column.strings, std::vector<std::string>{"train-llm"});
    EXPECT_EQ(out[0].column.ts, std::vector<int64_t>{-5});
    out.clear();
    ASSERT_TRUE(db_->Read({"job", {}, "u"}, &out).ok());
    EXPECT_EQ(out[0].column.uints, std::vector<uint64_t>{UINT64_MAX});
    Reopen();
  }
}

TEST_F(DbTest, ListingsReflectTheCatalogAcrossRestart) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 0, int64_t{1}), GpuPoint("n1", 1, 0, int64_t{1}),
                          GpuPoint("n2", 0, 0, int64_t{1})})
                  .ok());
  Point node;
  node.measurement = "node";
  node.tags = {{"node", "n1"}};
  node.fields = {{"cpu", 0.5}};
  ASSERT_TRUE(db_->Write({node}).ok());
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::string> names;
    ASSERT_TRUE(db_->ListMeasurements(&names).ok());
    EXPECT_EQ(names, (std::vector<std::string>{"gpu", "node"}));
    ASSERT_TRUE(db_->ListTagKeys("gpu", &names).ok());
    EXPECT_EQ(names, (std::vector<std::string>{"gpu", "node"}));
    ASSERT_TRUE(db_->ListTagValues("gpu", "node", &names).ok());
    EXPECT_EQ(names, (std::vector<std::string>{"n1", "n2"}));
    std::vector<Series> series;
    ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n1"}}, &series).ok());
    ASSERT_EQ(series.size(), 2u);
    EXPECT_EQ(series[1].tags, (std::vector<Tag>{{"gpu", "1"}, {"node", "n1"}}));
    series.clear();
    ASSERT_TRUE(db_->ListSeries("", {}, &series).ok());
    EXPECT_EQ(series.size(), 4u);
    Reopen();
  }
}

TEST_F(DbTest, SeriesAreListedInKeyOrderWhateverOrderTheyWereWrittenIn) {
  // Written out of order, with a measurement that is a prefix of another
  // and a tag value that is a prefix of another.
  Point later;
  later.measurement = "gpu2";
  later.tags = {{"node", "a"}};
  later.fields = {{"util", int64_t{1}}};
  ASSERT_TRUE(
      db_->Write({later, GpuPoint("n10", 0, 0, int64_t{1}), GpuPoint("n1", 1, 0, int64_t{1}),
                  GpuPoint("n1", 0, 0, int64_t{1}), GpuPoint("n2", 0, 0, int64_t{1})})
          .ok());
  const std::vector<std::pair<std::string, std::vector<Tag>>> want = {
      {"gpu", {{"gpu", "0"}, {"node", "n1"}}},
      {"gpu", {{"gpu", "0"}, {"node", "n10"}}},
      {"gpu", {{"gpu", "0"}, {"node", "n2"}}},
      {"gpu", {{"gpu", "1"}, {"node", "n1"}}},
      {"gpu2", {{"node", "a"}}},
  };
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Series> series;
    ASSERT_TRUE(db_->ListSeries("", {}, &series).ok());
    ASSERT_EQ(series.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(series[i].measurement, want[i].first) << i;
      EXPECT_EQ(series[i].tags, want[i].second) << i;
    }
    Reopen();
  }
}

TEST_F(DbTest, SeriesAddedAfterAListingJoinTheKeyOrderAndKeepTheirIds) {
  // The catalog keeps its key order between listings and merges new series
  // into it: series written after a listing must land before, between and
  // after the ones listed.
  std::mt19937_64 rng(3);
  std::vector<std::string> nodes;
  for (int i = 0; i < 60; ++i) nodes.push_back("n" + std::to_string(rng() % 1000));
  // The canonical key's order: tag by tag, key then value, bytewise.
  const auto key_of = [](const Series& x) {
    std::string k = x.measurement;
    for (const Tag& t : x.tags) k += std::string(1, '\0') + t.key + '\0' + t.value;
    return k;
  };
  std::vector<SeriesId> first_ids;
  std::vector<Series> first;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(db_->Write({GpuPoint(nodes[round * 20 + i], i % 3, 0, int64_t{1})}).ok());
    }
    std::vector<Series> series;
    std::vector<SeriesId> ids;
    ASSERT_TRUE(db_->ListSeries("gpu", {}, &series, &ids).ok());
    ASSERT_EQ(series.size(), ids.size());
    ASSERT_GE(series.size(), 20u * (round + 1) - 5);  // nodes may repeat
    for (size_t i = 1; i < series.size(); ++i) {
      EXPECT_LT(key_of(series[i - 1]), key_of(series[i])) << "round " << round << " at " << i;
    }
    // A series keeps its id, and the id is the one its key finds.
    for (size_t i = 0; i < first.size(); ++i) {
      const auto at = std::find(series.begin(), series.end(), first[i]) - series.begin();
      ASSERT_LT(static_cast<size_t>(at), series.size());
      EXPECT_EQ(ids[static_cast<size_t>(at)], first_ids[i]);
    }
    if (round == 0) {
      first = series;
      first_ids = ids;
    }
    std::vector<Series> filtered;
    ASSERT_TRUE(db_->ListSeries("gpu", {{"gpu", "1"}}, &filtered).ok());
    ASSERT_FALSE(filtered.empty());
    for (size_t i = 1; i < filtered.size(); ++i) {
      EXPECT_LT(key_of(filtered[i - 1]), key_of(filtered[i]));
    }
  }
}

TEST_F(DbTest, TagMatchersSelectWhatAFilterOfEverySeriesSelects) {
  // 6 nodes x 4 GPUs in two racks, plus another measurement with the same tags.
  std::vector<Point> batch;
  for (int n = 0; n < 6; ++n) {
    for (int g = 0; g < 4; ++g) {
      Point p = GpuPoint("n" + std::to_string(n), g, 0, int64_t{1});
      p.tags.push_back({"rack", n < 3 ? "r1" : "r2"});
      batch.push_back(p);
      p.measurement = "power";
      batch.push_back(p);
    }
  }
  ASSERT_TRUE(db_->Write(batch).ok());
  const auto expected = [&](const std::vector<TagMatcher>& matchers) {
    std::vector<Series> all, out;
    EXPECT_TRUE(db_->ListSeries("gpu", {}, &all).ok());
    for (const Series& x : all) {
      const bool all_match = std::all_of(matchers.begin(), matchers.end(), [&](const auto& m) {
        return std::any_of(x.tags.begin(), x.tags.end(),
                           [&](const Tag& t) { return t.key == m.key && t.value == m.value; });
      });
      if (all_match) out.push_back(x);
    }
    return out;
  };
  const std::vector<std::vector<TagMatcher>> cases = {
      {},
      {{"node", "n1"}},
      {{"rack", "r2"}, {"gpu", "3"}},
      {{"gpu", "0"}, {"rack", "r1"}, {"node", "n2"}},
      {{"gpu", "0"}, {"node", "n4"}, {"rack", "r1"}},  // no series has all three
      {{"node", "n9"}},                                // no such value
      {{"zone", "a"}},                                 // no such key
  };
  const auto check = [&](const std::string& when) {
    for (const auto& matchers : cases) {
      std::vector<Series> got;
      ASSERT_TRUE(db_->ListSeries("gpu", matchers, &got).ok());
      EXPECT_EQ(got, expected(matchers)) << when << ", " << matchers.size() << " matchers";
    }
  };
  check("written");
  std::vector<Series> n1_gpu0;
  ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n1"}, {"gpu", "0"}}, &n1_gpu0).ok());
  ASSERT_EQ(n1_gpu0.size(), 1u);
  ASSERT_TRUE(db_->DropSeries(n1_gpu0).ok());
  check("after a drop");
  std::vector<Series> got;
  ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n1"}}, &got).ok());
  EXPECT_EQ(got.size(), 3u);  // the dropped series is in no matcher's answer
  Reopen();
  check("reopened");
  Point again = GpuPoint("n1", 0, kMinute, int64_t{2});
  again.tags.push_back({"rack", "r1"});
  ASSERT_TRUE(db_->Write({again}).ok());  // written again: back in every answer

  check("written again");
  got.clear();  // ListSeries appends
  ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n1"}}, &got).ok());
  EXPECT_EQ(got.size(), 4u);
}

TEST_F(DbTest, TagKeysValuesAndCountsWithinAScopeAreThoseOfTheScopedSeries) {
  std::mt19937 rng(11);
  std::vector<Point> batch;
  for (int i = 0; i < 300; ++i) {
    Point p;
    p.measurement = i % 7 == 0 ? "cpu" : "gpu";
    p.tags = {{"node", "n" + std::to_string(rng() % 60)}};
    if (rng() % 3 != 0) p.tags.push_back({"gpu", std::to_string(rng() % 8)});
    if (rng() % 5 == 0) p.tags.push_back({"rack", "r" + std::to_string(rng() % 4)});
    const int db = static_cast<int>(rng() % 3);  // a, b, or no database
    if (db < 2) p.tags.push_back({"db", db == 0 ? "a" : "b"});
    p.fields = {{"util", int64_t{1}}};
    p.timestamp_ns = i;
    batch.push_back(std::move(p));
  }
  ASSERT_TRUE(db_->Write(batch).ok());
  // Drop a few series, so that postings lose ids.
  std::vector<Series> some;
  ASSERT_TRUE(db_->ListSeries("gpu", {{"node", "n3"}}, &some).ok());
  ASSERT_TRUE(db_->DropSeries(some).ok());
  const std::vector<std::vector<TagMatcher>> scopes = {
      {}, {{"db", "a"}}, {{"db", "b"}}, {{"db", "zz"}}, {{"db", "a"}, {"rack", "r1"}}};
  for (const std::string m : {"gpu", "cpu", "nothing"}) {
    for (const auto& scope : scopes) {
      SCOPED_TRACE(m + " within " + std::to_string(scope.size()) + " matchers" +
                   (scope.empty() ? "" : ", db=" + scope[0].value));
      std::vector<Series> series;
      ASSERT_TRUE(db_->ListSeries(m, scope, &series).ok());
      std::map<std::string, std::set<std::string>> expected;
      for (const Series& x : series) {
        for (const Tag& t : x.tags) expected[t.key].insert(t.value);
      }
      uint64_t count = 99;
      ASSERT_TRUE(db_->CountSeries(m, scope, &count).ok());
      EXPECT_EQ(count, series.size());
      std::vector<std::string> keys;
      ASSERT_TRUE(db_->ListTagKeys(m, scope, &keys).ok());
      std::vector<std::string> expected_keys;
      for (const auto& [k, _] : expected) expected_keys.push_back(k);
      EXPECT_EQ(keys, expected_keys);
      for (const std::string key : {"node", "gpu", "rack", "db", "absent"}) {
        std::vector<std::string> values;
        ASSERT_TRUE(db_->ListTagValues(m, key, scope, &values).ok());
        const auto it = expected.find(key);
        const std::vector<std::string> want =
            it == expected.end() ? std::vector<std::string>()
                                 : std::vector<std::string>(it->second.begin(), it->second.end());
        EXPECT_EQ(values, want) << key;
      }
    }
  }
}

TEST_F(DbTest, AReadByIdIsTheReadByKey) {
  for (int64_t t = 0; t < 50; ++t) {
    ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, t * 1000, int64_t{t}),
                            GpuPoint("n2", 1, t * 1000, int64_t{100 - t})})
                    .ok());
    if (t == 30) {
      ASSERT_TRUE(db_->Flush().ok());  // stored points and unflushed ones
    }
  }
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db_->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), 2u);
  const std::vector<std::string> fields = {"util"};
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<Column> by_key, by_id;
    ASSERT_TRUE(db_->ReadSeries(series[i], fields, 10'000, 45'000, &by_key).ok());
    ASSERT_TRUE(db_->ReadSeries(ids[i], fields, 10'000, 45'000, &by_id).ok());
    ASSERT_EQ(by_id.size(), 1u);
    EXPECT_EQ(by_id[0].size(), 35u);
    EXPECT_EQ(by_id[0].ts, by_key[0].ts);
    EXPECT_EQ(by_id[0].ints, by_key[0].ints);
    size_t scanned = 0;
    ASSERT_TRUE(db_->ScanSeries(
                       ids[i], fields, 10'000, 45'000,
                       [&](size_t, const Column&, size_t b, size_t e) { scanned += e - b; },
                       nullptr)
                    .ok());
    EXPECT_EQ(scanned, 35u);
  }
  std::vector<Column> none;
  const Status missing = db_->ReadSeries(SeriesId{77}, fields, 0, 50'000, &none);
  EXPECT_TRUE(missing.IsNotFound()) << missing.ToString();
  EXPECT_NE(missing.message().find("no series with id 77"), std::string::npos)
      << missing.ToString();
}

TEST_F(DbTest, SecondOpenOfTheSameDirectoryIsBusy) {
  std::unique_ptr<Db> second;
  const Status s = Db::Open(options_, dir_.path(), &second);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find(dir_.path()), std::string::npos);
}

TEST_F(DbTest, AnotherProcessOpeningTheDirectoryIsBusy) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<Db> other;
    const Status s = Db::Open(options_, dir_.path(), &other);
    const bool clear =
        s.IsBusy() && s.message().find("in use by another process") != std::string::npos;
    _exit(clear ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(DbTest, ReopeningDoesNotPileUpWalSegments) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 0, int64_t{1})}).ok());
  for (int i = 0; i < 5; ++i) Reopen();
  size_t segments = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/wal")) {
    segments += e.path().extension() == ".log";
  }
  EXPECT_EQ(segments, 1u);
  EXPECT_EQ(ReadInts("n1", 0).size(), 1u);
}

TEST_F(DbTest, ExtremeTimestampsAreStored) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, INT64_MIN, int64_t{1}),
                          GpuPoint("n1", 0, INT64_MAX - 1, int64_t{2})})
                  .ok());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(ReadInts("n1", 0),
              (std::vector<std::pair<int64_t, int64_t>>{{INT64_MIN, 1}, {INT64_MAX - 1, 2}}));
    ASSERT_TRUE(db_->Flush().ok());
  }
}

TEST_F(DbTest, MissingDirectoryWithoutCreateIsNotFound) {
  Options o = options_;
  o.create_if_missing = false;
  std::unique_ptr<Db> db;
  EXPECT_TRUE(Db::Open(o, dir_.path() + "/absent", &db).IsNotFound());
}

TEST_F(DbTest, ChunkWindowsSplitLongSeries) {
  WriteFlushedMinutes(300);
  const auto all = ReadInts("n1", 0);
  ASSERT_EQ(all.size(), 300u);
  for (int m = 0; m < 300; ++m) ASSERT_EQ(all[m].second, m);
  // A range that starts and ends inside windows.
  const auto some = ReadInts("n1", 0, 59 * kMinute, 121 * kMinute);
  ASSERT_EQ(some.size(), 62u);
  EXPECT_EQ(some.front().second, 59);
  EXPECT_EQ(some.back().second, 120);
}

// ScanSeries hands over what ReadSeries reads, in runs: stored windows
// (decoded, then from the read cache) in place, and from the first unflushed
// point on the merge, where a newer point in the head replaces a stored one.
TEST_F(DbTest, ScanSeriesHandsOverWhatReadSeriesReads) {
  WriteFlushedMinutes(300);
  std::vector<Point> batch;
  const Series series{"gpu", {{"gpu", "0"}, {"node", "n1"}}};
  const std::vector<std::string> fields = {"util", "no_such_field"};
  // (field, ts, value) in the order handed over; runs must not be empty.
  // With `packed`, cached windows of steady integers come packed, and
  // `packed_runs` counts them.
  size_t packed_runs = 0;
  const auto scan = [&](int64_t start, int64_t end, bool packed = false) {
    std::vector<std::tuple<size_t, int64_t, int64_t>> got;
    size_t runs = 0;
    const Db::PackedRunVisitor take_packed = [&](size_t f, const storage::PackedRun& run,
                                                 size_t begin, size_t stop) {
      EXPECT_LT(begin, stop);
      EXPECT_LE(stop, run.size);
      ++runs;
      ++packed_runs;
      for (size_t i = begin; i < stop; ++i) {
        uint32_t offset = 0;  // little-endian host: the low bytes
        std::memcpy(&offset, run.offsets + i * run.width, run.width);
        got.emplace_back(f, run.TimeAt(i), static_cast<int64_t>(run.base + offset));
      }
    };
    EXPECT_TRUE(db_->ScanSeries(
                       series, fields, start, end,
                       [&](size_t f, const Column& c, size_t begin, size_t stop) {
                         EXPECT_LT(begin, stop);
                         ++runs;
                         for (size_t i = begin; i < stop; ++i)
                           got.emplace_back(f, c.ts[i], c.ints[i]);
                       },
                       packed ? &take_packed : nullptr)
                    .ok());
    return std::make_pair(got, runs);
  };
  const auto read = [&](int64_t start, int64_t end) {
    std::vector<Column> cols;
    EXPECT_TRUE(db_->ReadSeries(series, fields, start, end, &cols).ok());
    std::vector<std::tuple<size_t, int64_t, int64_t>> got;
    for (size_t f = 0; f < cols.size(); ++f) {
      for (size_t i = 0; i < cols[f].size(); ++i)
        got.emplace_back(f, cols[f].ts[i], cols[f].ints[i]);
    }
    return got;
  };
  for (int pass = 0; pass < 2; ++pass) {  // decoded, then cached
    const auto [all, runs] = scan(INT64_MIN, INT64_MAX);
    EXPECT_EQ(all, read(INT64_MIN, INT64_MAX));
    EXPECT_EQ(all.size(), 300u);
    EXPECT_EQ(runs, 5u);  // one a stored window
    EXPECT_EQ(scan(59 * kMinute, 121 * kMinute).first, read(59 * kMinute, 121 * kMinute));
  }
  // Cached windows of minutely integers are packed: handed over so, the
  // same points, and ranges that cut windows cut the packed runs too.
  EXPECT_EQ(scan(INT64_MIN, INT64_MAX, true).first, read(INT64_MIN, INT64_MAX));
  EXPECT_EQ(packed_runs, 5u);
  EXPECT_EQ(scan(59 * kMinute, 121 * kMinute, true).first, read(59 * kMinute, 121 * kMinute));
  EXPECT_EQ(scan(59 * kMinute + 1, 61 * kMinute - 1, true).first,
            read(59 * kMinute + 1, 61 * kMinute - 1));
  // Unflushed: a newer value for minute 100, and minutes 300-309.
  batch.clear();
  batch.push_back(GpuPoint("n1", 0, 100 * kMinute, int64_t{-1}));
  for (int m = 300; m < 310; ++m) batch.push_back(GpuPoint("n1", 0, m * kMinute, int64_t{m}));
  ASSERT_TRUE(db_->Write(batch).ok());
  const auto [all, runs] = scan(INT64_MIN, INT64_MAX);
  EXPECT_EQ(all, read(INT64_MIN, INT64_MAX));
  ASSERT_EQ(all.size(), 310u);
  EXPECT_EQ(std::get<2>(all[100]), -1);
  EXPECT_EQ(scan(90 * kMinute, 305 * kMinute).first, read(90 * kMinute, 305 * kMinute));
  EXPECT_EQ(scan(0, 60 * kMinute).first, read(0, 60 * kMinute));
  EXPECT_EQ(scan(INT64_MIN, INT64_MAX, true).first, read(INT64_MIN, INT64_MAX));
  EXPECT_EQ(scan(90 * kMinute, 305 * kMinute, true).first, read(90 * kMinute, 305 * kMinute));
  EXPECT_TRUE(db_->ScanSeries(
                     Series{"gpu", {{"node", "zz"}}}, fields, 0, kMinute,
                     [](size_t, const Column&, size_t, size_t) {}, nullptr)
                  .IsNotFound());
}

// ScanSeries of many series hands over each series' runs as a ScanSeries of
// that series alone would, by position in the ids given (in any order), with
// one store iterator for all: stored windows, cached and packed ones, and
// unflushed points merged over stored ones.
TEST_F(DbTest, ScanSeriesOfManyHandsOverEachSeriesAsAScanOfItAlone) {
  std::vector<Point> batch;
  for (int m = 0; m < 200; ++m) {
    for (int s = 0; s < 6; ++s) {
      if (s == 3 && m < 120) continue;  // starts in a later window
      batch.push_back(GpuPoint("n" + std::to_string(s / 2), s % 2, m * kMinute, int64_t{m + s}));
    }
  }
  ASSERT_TRUE(db_->Write(batch).ok());
  ASSERT_TRUE(db_->Flush().ok());
  batch.clear();
  batch.push_back(GpuPoint("n2", 0, 50 * kMinute, int64_t{-7}));  // newer than the stored one
  for (int m = 200; m < 205; ++m) batch.push_back(GpuPoint("n0", 1, m * kMinute, int64_t{m}));
  ASSERT_TRUE(db_->Write(batch).ok());
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db_->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), 6u);
  const std::vector<std::string> fields = {"no_such_field", "util"};
  // (position, field, ts, value), in the order handed over.
  using Points = std::vector<std::tuple<size_t, size_t, int64_t, int64_t>>;
  const auto take = [](Points* into, size_t s, size_t f, const Column& c, size_t b, size_t e) {
    EXPECT_LT(b, e);
    for (size_t i = b; i < e; ++i) into->emplace_back(s, f, c.ts[i], c.ints[i]);
  };
  const auto take_packed = [](Points* into, size_t s, size_t f, const storage::PackedRun& run,
                              size_t b, size_t e) {
    EXPECT_LT(b, e);
    for (size_t i = b; i < e; ++i) {
      uint32_t offset = 0;  // little-endian host: the low bytes
      std::memcpy(&offset, run.offsets + i * run.width, run.width);
      into->emplace_back(s, f, run.TimeAt(i), static_cast<int64_t>(run.base + offset));
    }
  };
  const std::vector<SeriesId> order = {ids[4], ids[1], ids[5], ids[0], ids[3], ids[2]};
  for (const auto& [start, end] : std::vector<std::pair<int64_t, int64_t>>{
           {INT64_MIN, INT64_MAX}, {45 * kMinute, 130 * kMinute}, {150 * kMinute, 203 * kMinute}}) {
    for (int pass = 0; pass < 3; ++pass) {  // decoded, cached, cached and packed
      Points together, alone;
      const Db::SeriesPackedVisitor packed = [&](size_t s, size_t f, const storage::PackedRun& r,
                                                 size_t b, size_t e) {
        take_packed(&together, s, f, r, b, e);
      };
      ASSERT_TRUE(db_->ScanSeries(
                         order, fields, start, end,
                         [&](size_t s, size_t f, const Column& c, size_t b, size_t e) {
                           take(&together, s, f, c, b, e);
                         },
                         pass == 2 ? &packed : nullptr)
                      .ok());
      for (size_t s = 0; s < order.size(); ++s) {
        const Db::PackedRunVisitor one_packed = [&](size_t f, const storage::PackedRun& r, size_t b,
                                                    size_t e) {
          take_packed(&alone, s, f, r, b, e);
        };
        ASSERT_TRUE(db_->ScanSeries(
                           order[s], fields, start, end,
                           [&](size_t f, const Column& c, size_t b, size_t e) {
                             take(&alone, s, f, c, b, e);
                           },
                           pass == 2 ? &one_packed : nullptr)
                        .ok());
      }
      EXPECT_EQ(together, alone) << "range " << start << ".." << end << " pass " << pass;
      ASSERT_FALSE(together.empty());
      // Series come in the order given, and every point is util's.
      EXPECT_TRUE(std::is_sorted(
          together.begin(), together.end(),
          [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); }));
      EXPECT_TRUE(std::all_of(together.begin(), together.end(),
                              [](const auto& p) { return std::get<1>(p) == 1; }));
    }
  }
  // The unflushed points are there: n2/0's newer minute 50, n0/1's minutes 200-204.
  Points all;
  ASSERT_TRUE(db_->ScanSeries(
                     ids, fields, INT64_MIN, INT64_MAX,
                     [&](size_t s, size_t f, const Column& c, size_t b, size_t e) {
                       take(&all, s, f, c, b, e);
                     },
                     nullptr)
                  .ok());
  EXPECT_EQ(all.size(), 5u * 200 + 80 + 5);
  const size_t n2 = static_cast<size_t>(
      std::find_if(series.begin(), series.end(),
                   [](const Series& x) {
                     return x.tags == std::vector<Tag>{{"gpu", "0"}, {"node", "n2"}};
                   }) -
      series.begin());
  EXPECT_NE(
      std::find(all.begin(), all.end(), std::make_tuple(n2, size_t{1}, 50 * kMinute, int64_t{-7})),
      all.end());
  const Status bad = db_->ScanSeries(
      std::vector<SeriesId>{ids[0], 12345}, fields, 0, kMinute,
      [](size_t, size_t, const Column&, size_t, size_t) {}, nullptr);
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
  EXPECT_NE(bad.message().find("12345"), std::string::npos);
}

// TimeExtent: the first and last point of series' fields in a range, from
// chunk headers, a chunk a bound cuts, and unflushed points; as the points
// themselves say, after a delete too.
TEST_F(DbTest, TimeExtentIsTheFirstAndLastPointInTheRange) {
  std::vector<Point> batch;
  for (int m = 0; m < 200; ++m) {
    batch.push_back(GpuPoint("a", 0, m * kMinute, int64_t{m}));
    if (m >= 120) batch.push_back(GpuPoint("b", 0, m * kMinute, int64_t{m}));
  }
  batch.push_back({"gpu", {{"gpu", "0"}, {"node", "c"}}, {{"temp", int64_t{50}}}, 7 * kMinute});
  ASSERT_TRUE(db_->Write(batch).ok());
  ASSERT_TRUE(db_->Flush().ok());
  batch.clear();
  for (int m = 200; m < 205; ++m) batch.push_back(GpuPoint("b", 0, m * kMinute, int64_t{m}));
  ASSERT_TRUE(db_->Write(batch).ok());  // unflushed
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db_->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), 3u);
  const std::vector<std::string> util = {"util"};
  // The extent as the points read say it, and as TimeExtent does.
  const auto scanned = [&](std::vector<SeriesId> of, int64_t start, int64_t end) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    EXPECT_TRUE(db_->ScanSeries(
                       of, util, start, end,
                       [&](size_t, size_t, const Column& c, size_t b, size_t e) {
                         first = std::min(first, c.ts[b]);
                         last = std::max(last, c.ts[e - 1]);
                       },
                       nullptr)
                    .ok());
    return std::make_pair(first, last);
  };
  const auto extent = [&](std::vector<SeriesId> of, int64_t start, int64_t end) {
    int64_t first = 0, last = 0;
    EXPECT_TRUE(db_->TimeExtent(of, util, start, end, &first, &last).ok());
    return std::make_pair(first, last);
  };
  using Range = std::pair<int64_t, int64_t>;
  EXPECT_EQ(extent(ids, INT64_MIN, INT64_MAX), Range(0, 204 * kMinute));
  EXPECT_EQ(extent(ids, 45 * kMinute, 130 * kMinute), Range(45 * kMinute, 129 * kMinute));
  EXPECT_EQ(extent(ids, 201 * kMinute + 1, INT64_MAX), Range(202 * kMinute, 204 * kMinute));
  const Range none = extent(ids, 500 * kMinute, 600 * kMinute);
  EXPECT_GT(none.first, none.second);
  for (const auto& [start, end] : std::vector<Range>{
           {INT64_MIN, INT64_MAX}, {45 * kMinute, 130 * kMinute}, {130 * kMinute, 203 * kMinute}}) {
    for (const std::vector<SeriesId>& of :
         {ids, std::vector<SeriesId>{ids[1]}, std::vector<SeriesId>{ids[2], ids[0]}}) {
      EXPECT_EQ(extent(of, start, end), scanned(of, start, end)) << start << ".." << end;
    }
  }
  const auto position_of = [&](const std::string& node) {
    for (size_t i = 0; i < series.size(); ++i) {
      for (const Tag& t : series[i].tags) {
        if (t.key == "node" && t.value == node) return i;
      }
    }
    return series.size();
  };
  // c has no util: nothing, though it has points of another field.
  const size_t c = position_of("c");
  const Range of_c = extent({ids[c]}, INT64_MIN, INT64_MAX);
  EXPECT_GT(of_c.first, of_c.second);
  // A delete of a's first 50 minutes moves the start to its 50th.
  const size_t a = position_of("a");
  ASSERT_TRUE(db_->Delete(std::span<const Series>(&series[a], 1), 0, 50 * kMinute).ok());
  EXPECT_EQ(extent(ids, INT64_MIN, INT64_MAX), Range(50 * kMinute, 204 * kMinute));
  int64_t first = 0, last = 0;
  const Status bad =
      db_->TimeExtent(std::vector<SeriesId>{ids[0], 12345}, util, 0, kMinute, &first, &last);
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
}

TEST_F(DbTest, AWideHeadIsFlushedBySeveralWorkersAndEveryPointReadsBack) {
  // 5,000 series: past the size a flush splits among workers (one a core).
  // Nine flushes of three minutes each give every day window parts 0..7,
  // then the ninth merges them into one: both paths run on every worker.
  constexpr int kSeries = 5000;
  for (int flush = 0; flush < 9; ++flush) {
    std::vector<Point> batch;
    for (int m = 3 * flush; m < 3 * flush + 3; ++m) {
      for (int s = 0; s < kSeries; ++s) {
        batch.push_back(
            GpuPoint("n" + std::to_string(s / 8), s % 8, m * kMinute, int64_t{m * kSeries + s}));
      }
    }
    ASSERT_TRUE(db_->Write(batch).ok());
    ASSERT_TRUE(db_->Flush().ok());
  }
  Reopen();  // everything from the store
  for (int s = 0; s < kSeries; s += 7) {
    const auto points = ReadInts("n" + std::to_string(s / 8), s % 8);
    ASSERT_EQ(points.size(), 27u) << "series " << s;
    for (int m = 0; m < 27; ++m) {
      EXPECT_EQ(points[m], std::make_pair(m * kMinute, int64_t{m * kSeries + s})) << "series " << s;
    }
  }
}

TEST_F(DbTest, HeadMemoryBoundTriggersBackgroundFlush) {
  options_.head_memory_bytes = 4 << 10;  // the first 4 KiB slab and 8 columns pass it
  Reopen();
  for (int m = 0; m < 200; ++m) {
    std::vector<Point> batch;
    for (int g = 0; g < 8; ++g) batch.push_back(GpuPoint("n1", g, m * kMinute, int64_t{m}));
    ASSERT_TRUE(db_->Write(batch).ok());
  }
  // No explicit Flush: the background flusher must have run on its own.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (db_->GetStats().flushes == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(db_->GetStats().flushes, 1u);
  EXPECT_LT(db_->GetStats().head_values, 200u * 8);
  for (int g = 0; g < 8; ++g) ASSERT_EQ(ReadInts("n1", g).size(), 200u);
}

TEST_F(DbTest, TheWalBoundFlushesAHeadThatPacksSmall) {
  // 40 constant fields with long names: the head packs them to about a byte
  // a value, the WAL takes about 30. A WAL of 8 x 256 KiB must flush the head
  // long before the head reaches its own bound.
  options_.head_memory_bytes = 256 << 10;
  Reopen();
  uint64_t most_head = 0;
  constexpr int kMinutes = 3000;
  for (int m = 0; m < kMinutes; ++m) {
    Point p = GpuPoint("n1", 0, m * kMinute, int64_t{0});
    for (int f = 0; f < 40; ++f) {
      p.fields.push_back({"a_rather_long_field_name_" + std::to_string(f), int64_t{7}});
    }
    ASSERT_TRUE(db_->Write({p}).ok());
    const DbStats stats = db_->GetStats();
    most_head = std::max(most_head, stats.head_bytes);
  }
  EXPECT_GE(db_->GetStats().flushes, 1u);
  EXPECT_LT(most_head, options_.head_memory_bytes);
  ASSERT_EQ(ReadInts("n1", 0).size(), static_cast<size_t>(kMinutes));
}

TEST_F(DbTest, ConcurrentWritersAndReaders) {
  options_.head_memory_bytes = 256 << 10;  // flushes happen while readers read
  Reopen();
  constexpr int kWriters = 4;
  constexpr int kMinutes = 400;
  for (int w = 0; w < kWriters; ++w) {  // the field exists before the reader starts
    ASSERT_TRUE(db_->Write({GpuPoint("n" + std::to_string(w), 0, 0, int64_t{0})}).ok());
  }
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      for (int w = 0; w < kWriters; ++w) {
        const auto points = ReadInts("n" + std::to_string(w), 0);
        // Each writer writes minutes in order, so a reader sees a prefix.
        for (size_t i = 0; i < points.size(); ++i) {
          if (points[i].first != static_cast<int64_t>(i) * kMinute) ++bad_reads;
        }
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int m = 0; m < kMinutes; ++m) {
        std::vector<Point> batch;
        for (int g = 0; g < 4; ++g) {
          batch.push_back(GpuPoint("n" + std::to_string(w), g, m * kMinute, int64_t{m}));
        }
        ASSERT_TRUE(db_->Write(batch).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad_reads, 0);
  for (int w = 0; w < kWriters; ++w) {
    for (int g = 0; g < 4; ++g) ASSERT_EQ(ReadInts("n" + std::to_string(w), g).size(), 400u);
  }
  EXPECT_EQ(db_->GetStats().values_written, uint64_t{kWriters} * (kMinutes * 4 + 1));
}

TEST_F(DbTest, CloseWhileWritersAndReadersRunIsSafe) {
  std::atomic<int> ok_writes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int m = 0; m < 2000; ++m) {
        if (t == 2) {
          std::vector<SeriesColumn> out;
          (void)db_->Read({"gpu", {}, "util"}, &out);
          continue;
        }
        if (!db_->Write({GpuPoint("n" + std::to_string(t), 0, m * kMinute, int64_t{m})}).ok()) {
          return;  // closed under us: every later write fails too
        }
        ++ok_writes;
      }
    });
  }
  // Close once the writers are under way (a fixed sleep raced with a slow
  // first write under ASan: nothing acknowledged, nothing to read back).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ok_writes.load() < 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ASSERT_TRUE(db_->Close().ok());
  for (auto& t : threads) t.join();
  ASSERT_GE(ok_writes.load(), 10);
  // Whatever was acknowledged before the close is there after reopening.
  Reopen();
  EXPECT_EQ(ReadInts("n0", 0).size() + ReadInts("n1", 0).size(),
            static_cast<size_t>(ok_writes.load()));
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

TEST_F(DbTest, CompactDropsReplacedChunkVersionsAndKeepsData) {
  // Ten flushes into the same day window leave ten versions of its chunk.
  for (int round = 0; round < 10; ++round) {
    std::vector<Point> batch;
    for (int m = round * 100; m < (round + 1) * 100; ++m) {
      batch.push_back(GpuPoint("n1", 0, m * kMinute / 10, int64_t{m}));
    }
    ASSERT_TRUE(db_->Write(batch).ok());
    ASSERT_TRUE(db_->Flush().ok());
  }
  const uint64_t before = DirBytes(dir_.path() + "/store");
  ASSERT_TRUE(db_->Compact().ok());
  const uint64_t after = DirBytes(dir_.path() + "/store");
  EXPECT_LT(after, before);
  EXPECT_EQ(ReadInts("n1", 0).size(), 1000u);
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 0, int64_t{-1})}).ok());  // still writable
  Reopen();
  const auto points = ReadInts("n1", 0);
  ASSERT_EQ(points.size(), 1000u);
  EXPECT_EQ(points[0].second, -1);
  EXPECT_EQ(points[999].second, 999);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/store.compacting"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/store.old"));
}

// A wide fleet's first hour (an hour of minute points from each of 2,000
// GPUs, six fields each) settles small: its window parts and tier rows hold
// a few points each, alike from series to series, which LevelDB's Snappy
// blocks pack, and only the 1d tier keeps quantile sketches
// (docs/format/key-layout.md, rollups.md). Without Snappy it takes 3.8
// bytes a value here (1.9 with it); the harness's 10,000-GPU hour went from
// 4.1 to 1.7 with both.
TEST_F(DbTest, AWideFleetsHourSettlesInUnderTwoAndAHalfBytesAValue) {
  std::mt19937_64 rng(3);
  constexpr int kGpus = 2000, kMinutes = 60;
  std::vector<int64_t> temp(kGpus, 60);
  for (int m = 0; m < kMinutes; ++m) {
    std::vector<Point> batch;
    for (int g = 0; g < kGpus; ++g) {
      temp[g] += static_cast<int64_t>(rng() % 3) - 1;
      Point p;
      p.measurement = "gpu";
      p.tags = {{"node", "n" + std::to_string(g / 8)}, {"gpu", std::to_string(g % 8)}};
      p.fields = {{"util", static_cast<int64_t>(rng() % 101)},
                  {"temp", temp[g]},
                  {"power", static_cast<double>(2000 + rng() % 2000) / 10},
                  {"mem", static_cast<int64_t>(40000 + rng() % 64)},
                  {"xid", int64_t{0}},
                  {"clock", int64_t{1410}}};
      p.timestamp_ns = 1'704'067'200'000'000'000 + m * kMinute;  // 2024-01-01
      batch.push_back(std::move(p));
    }
    ASSERT_TRUE(db_->Write(batch).ok());
  }
  ASSERT_TRUE(db_->Compact().ok());
  const double values = 6.0 * kGpus * kMinutes;
  const double bytes = static_cast<double>(DirBytes(dir_.path() + "/store"));
  EXPECT_LT(bytes / values, 2.5) << bytes << " bytes";
  EXPECT_EQ(ReadInts("n7", 3).size(), static_cast<size_t>(kMinutes));
}

TEST_F(DbTest, OpenFinishesACompactionSwapACrashInterrupted) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{5})}).ok());
  db_.reset();
  // The crash came between "store -> store.old" and "store.compacting -> store".
  const std::string store = dir_.path() + "/store";
  std::filesystem::copy(store, store + ".old");
  std::filesystem::rename(store, store + ".compacting");
  Reopen();
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 5}}));
  EXPECT_FALSE(std::filesystem::exists(store + ".compacting"));
  EXPECT_FALSE(std::filesystem::exists(store + ".old"));
}

TEST_F(DbTest, OpenDropsAnUnfinishedCompactionCopy) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, kMinute, int64_t{5})}).ok());
  db_.reset();
  const std::string copy = dir_.path() + "/store.compacting";
  std::filesystem::create_directory(copy);
  std::ofstream(copy + "/000001.log") << "half a copy";
  Reopen();
  EXPECT_EQ(ReadInts("n1", 0), (std::vector<std::pair<int64_t, int64_t>>{{kMinute, 5}}));
  EXPECT_FALSE(std::filesystem::exists(copy));
}

TEST_F(DbTest, FlushesAddChunkPartsThatReadsMergeNewestFirst) {
  // Twenty flushes into one day window, each rewriting some earlier minutes:
  // parts pile up, a flush merges them at kMergePartsAt, reads see the
  // newest value of every minute throughout, and so does a reopen.
  std::map<int64_t, int64_t> want;
  for (int round = 0; round < 20; ++round) {
    std::vector<Point> batch;
    for (int m = 0; m < 30; ++m) {
      const int64_t minute = (round * 17 + m * 7) % 300;  // overlaps earlier rounds
      batch.push_back(GpuPoint("n1", 0, minute * kMinute, int64_t{round * 1000 + m}));
      want[minute * kMinute] = round * 1000 + m;
    }
    ASSERT_TRUE(db_->Write(batch).ok());
    ASSERT_TRUE(db_->Flush().ok());
    const auto got = ReadInts("n1", 0);
    ASSERT_EQ(got.size(), want.size()) << "round " << round;
    size_t i = 0;
    for (const auto& [ts, value] : want) {
      ASSERT_EQ(got[i].first, ts) << "round " << round;
      ASSERT_EQ(got[i].second, value) << "round " << round << " ts " << ts;
      ++i;
    }
  }
  Reopen();
  const auto got = ReadInts("n1", 0);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(ReadInts("n1", 0), got);
}

TEST_F(DbTest, UnknownFieldIsNotFound) {
  ASSERT_TRUE(db_->Write({GpuPoint("n1", 0, 0, int64_t{1})}).ok());
  std::vector<SeriesColumn> out;
  const Status s = db_->Read({"gpu", {}, "temperature"}, &out);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find("temperature"), std::string::npos);
}

TEST_F(DbTest, CallsAfterCloseFail) {
  ASSERT_TRUE(db_->Close().ok());
  EXPECT_TRUE(db_->Close().ok());
  EXPECT_FALSE(db_->Write({GpuPoint("n1", 0, 0, int64_t{1})}).ok());
}

}  // namespace
}  // namespace gpulse
