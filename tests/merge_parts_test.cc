// Background part merging: windows that flushes left in several parts are
// merged into one once the data has moved past them, windows still filling
// are left alone, and reads, writes, flushes and tiers stay right while the
// merging runs beside them.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "leveldb/db.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/tier_rows.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z

int64_t Value(int node, int64_t ts) { return (ts / kMinute * 7 + node * 13) % 1000; }

Point At(int node, int64_t ts) {
  return Point{"gpu", {{"node", "n" + std::to_string(node)}}, {{"util", Value(node, ts)}}, ts};
}

// Parts per raw window, from the store itself (the Db closed).
std::map<std::pair<uint32_t, int64_t>, int> PartsPerWindow(const std::string& dir) {
  std::map<std::pair<uint32_t, int64_t>, int> out;
  leveldb::DB* raw = nullptr;
  EXPECT_TRUE(leveldb::DB::Open(leveldb::Options(), dir + "/store", &raw).ok());
  std::unique_ptr<leveldb::DB> store(raw);
  std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(std::string(1, storage::kChunkPrefix)); it->Valid(); it->Next()) {
    storage::ChunkKeyParts k;
    const std::string key = it->key().ToString();
    if (!storage::ParseChunkKey(key, &k) || k.tier != storage::kRawTier) break;
    ++out[{k.series_id, k.window_start}];
  }
  return out;
}

Options Quiet() {
  Options o;
  o.sync_policy = SyncPolicy::kNone;
  o.info_log = [](std::string_view) {};
  o.out_of_order_window = std::chrono::nanoseconds(0);
  return o;
}

TEST(MergePartsTest, ClosedWindowsAreMergedAndWindowsStillFillingAreLeft) {
  storage::ScratchDir dir;
  Options options = Quiet();
  options.merge_bytes_per_second = 0;  // only MergeParts merges
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    // Day 1 in three flushes (three parts), the last one late points in
    // among the first; day 2 in two flushes.
    for (int64_t from : {0, 600, 300}) {
      std::vector<Point> batch;
      for (int64_t m = from; m < from + 300; ++m) batch.push_back(At(0, kT0 + m * kMinute));
      ASSERT_TRUE(db->Write(batch).ok());
      ASSERT_TRUE(db->Flush().ok());
    }
    for (int64_t from : {1440, 1500}) {
      std::vector<Point> batch;
      for (int64_t m = from; m < from + 60; ++m) batch.push_back(At(0, kT0 + m * kMinute));
      ASSERT_TRUE(db->Write(batch).ok());
      ASSERT_TRUE(db->Flush().ok());
    }
    ASSERT_TRUE(db->MergeParts().ok());
    EXPECT_EQ(db->GetStats().windows_merged, 1u);
    std::vector<SeriesColumn> out;
    ASSERT_TRUE(db->Read({"gpu", {}, "util"}, &out).ok());
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].column.size(), 900u + 120u);
    for (size_t i = 0; i < out[0].column.size(); ++i) {
      ASSERT_EQ(out[0].column.ints[i], Value(0, out[0].column.ts[i])) << i;
    }
    ASSERT_TRUE(db->Close().ok());
  }
  const auto parts = PartsPerWindow(dir.path());
  EXPECT_EQ(parts.at({0, kT0}), 1);         // merged
  EXPECT_EQ(parts.at({0, kT0 + kDay}), 2);  // still filling: left
}

TEST(MergePartsTest, TheBackgroundMergesWithoutBeingAsked) {
  storage::ScratchDir dir;
  Options options = Quiet();
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  for (int64_t from : {0, 300, 1440}) {  // two parts in day 1, then day 2
    std::vector<Point> batch;
    for (int64_t m = from; m < from + 300; ++m) batch.push_back(At(0, kT0 + m * kMinute));
    ASSERT_TRUE(db->Write(batch).ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  for (int i = 0; i < 500 && db->GetStats().windows_merged == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(db->GetStats().windows_merged, 1u);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  EXPECT_EQ(PartsPerWindow(dir.path()).at({0, kT0}), 1);
}

TEST(MergePartsTest, ReadsWritesAndTiersStayRightWhileMergingRuns) {
  storage::ScratchDir dir;
  Options options = Quiet();
  options.head_memory_bytes = 64 << 10;  // a flush every few hundred points
  options.tiers = {"1h", "1d"};
  options.merge_bytes_per_second = 256 << 20;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  constexpr int kNodes = 4;
  constexpr int64_t kMinutes = 4 * 1440;
  // Every minute below `acked` is written for every node.
  std::atomic<int64_t> acked{0};
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    for (int64_t m = 0; m < kMinutes && !failed; m += 10) {
      std::vector<Point> batch;
      for (int node = 0; node < kNodes; ++node) {
        for (int64_t k = m; k < m + 10; ++k) batch.push_back(At(node, kT0 + k * kMinute));
        // A late point now and then, into a window already flushed.
        if (m % 170 == 0 && m > 1440) batch.push_back(At(node, kT0 + (m - 1000) * kMinute));
      }
      if (!db->Write(batch).ok()) {
        ADD_FAILURE() << "a write failed";
        failed = true;
      }
      // Flushes of their own too, so every day is written in several parts
      // however fast the background flushes run.
      if (m % 300 == 290 && !db->Flush().ok()) {
        ADD_FAILURE() << "a flush failed";
        failed = true;
      }
      acked = m + 10;
    }
  });
  std::thread reader([&] {
    while (acked < kMinutes && !failed) {
      const int64_t upto = acked;
      std::vector<SeriesColumn> out;
      const Status read = db->Read({"gpu", {{"node", "n2"}}, "util"}, &out);
      if (read.IsNotFound() && upto == 0) continue;  // before the first write
      if (!read.ok()) {
        ADD_FAILURE() << "a read failed: " << read.ToString();
        failed = true;
        break;
      }
      if (out.empty() && upto == 0) continue;  // before the first write
      if (out.size() != 1) {
        ADD_FAILURE() << "read " << out.size() << " series";
        failed = true;
        break;
      }
      const Column& c = out[0].column;
      if (static_cast<int64_t>(c.size()) < upto) {
        ADD_FAILURE() << "read " << c.size() << " points after " << upto << " were acknowledged";
        failed = true;
      }
      for (size_t i = 0; i < c.size() && !failed; ++i) {
        if (c.ts[i] != kT0 + static_cast<int64_t>(i) * kMinute || c.ints[i] != Value(2, c.ts[i])) {
          ADD_FAILURE() << "read " << i << " of " << c.size() << " is wrong";
          failed = true;
        }
      }
    }
  });
  std::thread merger([&] {
    while (acked < kMinutes && !failed) {
      if (!db->MergeParts().ok()) {
        ADD_FAILURE() << "MergeParts failed";
        failed = true;
      }
    }
  });
  writer.join();
  reader.join();
  merger.join();
  ASSERT_FALSE(failed);
  ASSERT_TRUE(db->Flush().ok());
  // One more day, so the last written window is closed too; then merge.
  std::vector<Point> next;
  for (int node = 0; node < kNodes; ++node) next.push_back(At(node, kT0 + kMinutes * kMinute));
  ASSERT_TRUE(db->Write(next).ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->MergeParts().ok());
  EXPECT_GT(db->GetStats().windows_merged, 0u) << db->GetStats().flushes << " flushes";
  // Tiers against raw, for every node.
  const std::vector<std::string> fields{"util"};
  for (int node = 0; node < kNodes; ++node) {
    const Series s{"gpu", {{"node", "n" + std::to_string(node)}}};
    std::vector<Column> raw;
    ASSERT_TRUE(db->ReadSeries(s, fields, INT64_MIN, INT64_MAX, &raw).ok());
    ASSERT_EQ(static_cast<int64_t>(raw[0].size()), kMinutes + 1);
    for (size_t t : {size_t{1}, size_t{2}}) {
      test::ExpectSameRollups(test::AllRollups(db.get(), s, "util", t), test::RollupsOf(raw[0], t),
                              s.tags[0].value + " tier " + storage::kTiers[t].name);
    }
  }
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  // Every window but the last day's is one part now.
  for (const auto& [window, parts] : PartsPerWindow(dir.path())) {
    if (window.second < kT0 + 4 * kDay) {
      EXPECT_EQ(parts, 1) << window.first << " " << window.second;
    }
  }
}

}  // namespace
}  // namespace gpulse
