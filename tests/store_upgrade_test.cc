// A data directory as session 38's gpulse left it (store format 7: raw
// chunks of version 1, tier blocks without dictionaries) opens, reads every
// point as written, and compacts into the current formats without a change
// to any answer (docs/format/key-layout.md, "Format version").

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"
#include "tests/support/first_version_chunks.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z

TEST(StoreUpgradeTest, AFormatSevenStoreWithFirstVersionChunksReadsAndCompacts) {
  storage::ScratchDir dir;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  // Two days of four GPUs, times a few ns off the minute (so that their
  // version-2 chunks are in ns, whose bodies are version 1's).
  std::vector<Point> points;
  for (int64_t m = 0; m < 2 * 1440; m += 7) {
    for (int g = 0; g < 4; ++g) {
      points.push_back(Point{"gpu",
                             {{"gpu", std::to_string(g)}},
                             {{"util", int64_t{(m * 13 + g) % 100}}, {"power", 300.5 + g}},
                             kT0 + m * kMinute + (m % 5) + g});
    }
  }
  const std::vector<std::string> fields{"util", "power"};
  // Every GPU's times and values of both fields, as text to compare.
  const auto read_all = [&](Db* db) {
    std::string out;
    for (int g = 0; g < 4; ++g) {
      std::vector<Column> columns;
      EXPECT_TRUE(db->ReadSeries(Series{"gpu", {{"gpu", std::to_string(g)}}}, fields, INT64_MIN,
                                 INT64_MAX, &columns)
                      .ok());
      for (const Column& c : columns) {
        for (size_t i = 0; i < c.size(); ++i) {
          out += std::to_string(c.ts[i]) + " " +
                 (c.type == FieldType::kInt ? std::to_string(c.ints[i])
                                            : std::to_string(c.floats[i])) +
                 "\n";
        }
      }
    }
    return out;
  };
  std::string written;
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    ASSERT_TRUE(db->Write(points).ok());
    ASSERT_TRUE(db->Flush().ok());
    written = read_all(db.get());
  }
  ASSERT_EQ(std::count(written.begin(), written.end(), '\n'),
            static_cast<std::ptrdiff_t>(points.size() * 2));
  // Every raw chunk back to version 1, and the version a format-7 gpulse wrote.
  size_t converted = 0;
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    leveldb::WriteBatch batch;
    std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      storage::ChunkKeyParts k;
      if (!storage::ParseChunkKey(it->key().ToString(), &k) || k.tier != storage::kRawTier) {
        continue;
      }
      const std::string v1 = test::FirstVersionChunk(it->value().ToString(), k.window_start);
      ASSERT_FALSE(v1.empty()) << storage::KeyHex(it->key().ToString());
      batch.Put(it->key(), v1);
      ++converted;
    }
    std::string version;
    storage::PutU32BE(&version, 7);
    batch.Put(storage::VersionKey(), version);
    ASSERT_TRUE(store->Write(leveldb::WriteOptions(), &batch).ok());
  }
  ASSERT_EQ(converted, 4u * 2 * 2);  // four GPUs, two fields, two day windows

  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  EXPECT_EQ(read_all(db.get()), written);
  ASSERT_TRUE(db->Compact().ok());
  EXPECT_EQ(read_all(db.get()), written);
  Db::VerifyReport report;
  ASSERT_TRUE(db->Verify(/*drop_damaged=*/false, &report).ok());
  EXPECT_TRUE(report.damaged.empty());
  EXPECT_EQ(report.parts, converted);
  db.reset();
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  EXPECT_EQ(read_all(db.get()), written);
}

}  // namespace
}  // namespace gpulse
