// The catalog in memory: series found by key and fields by name through a
// series' cache of field ids, the same after a reload from LevelDB, and what
// a fleet's series takes of the heap.
#include "engine/series_index.h"

#include <gtest/gtest.h>
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <malloc.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "storage/key_layout.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::engine {
namespace {

constexpr int kFields = 10;

std::string FieldName(int f) { return "field_" + std::to_string(f); }

// A key shaped as the fleet generator's: five tags, a node name of eleven
// characters and a product name of fourteen.
std::string GpuKey(int i) {
  char node[16];
  std::snprintf(node, sizeof node, "use1-a-n%03d", i / 8 % 1000);
  return storage::CanonicalSeriesKey("gpu", {{"cluster", "use1-a-" + std::to_string(i / 8000)},
                                             {"gpu", std::to_string(i % 8)},
                                             {"node", node},
                                             {"region", "us-east"},
                                             {"sku", "A100-SXM4-80GB"}});
}

void AddFields(SeriesIndex* index, leveldb::WriteBatch* batch) {
  for (int f = 0; f < kFields; ++f) index->AddField("gpu", FieldName(f), FieldType::kInt, batch);
}

TEST(SeriesIndexTest, FindsSeriesByKeyAndFieldsByNameWithAnyHintAndAfterAReload) {
  storage::ScratchDir dir;
  leveldb::DB* raw = nullptr;
  leveldb::Options options;
  options.create_if_missing = true;
  ASSERT_TRUE(leveldb::DB::Open(options, dir.path(), &raw).ok());
  const std::unique_ptr<leveldb::DB> db(raw);

  constexpr int kSeries = 3000;
  {
    SeriesIndex index;
    leveldb::WriteBatch batch;
    AddFields(&index, &batch);
    for (int i = 0; i < kSeries; ++i) {
      ASSERT_EQ(index.FindSeries(GpuKey(i)), kNoId);
      ASSERT_EQ(index.AddSeries(GpuKey(i), &batch), static_cast<uint32_t>(i));
    }
    ASSERT_TRUE(db->Write(leveldb::WriteOptions(), &batch).ok());
    for (int i = 0; i < kSeries; ++i) ASSERT_EQ(index.FindSeries(GpuKey(i)), uint32_t(i)) << i;
    // Fields in the point's order, then out of it (a stale hint), then a
    // name the measurement has not: each answer is the catalog's own.
    for (uint32_t id = 0; id < 50; ++id) {
      for (int f = 0; f < kFields; ++f) {
        const FieldEntry* field = index.FindSeriesField(id, FieldName(f), f, kFields);
        ASSERT_NE(field, nullptr);
        EXPECT_EQ(field, index.FindField("gpu", FieldName(f)));
      }
      for (int f = kFields - 1; f >= 0; --f) {
        EXPECT_EQ(index.FindSeriesField(id, FieldName(f), (f + 3) % kFields, kFields),
                  index.FindField("gpu", FieldName(f)));
      }
      EXPECT_EQ(index.FindSeriesField(id, "no_such_field", 0, kFields), nullptr);
    }
    EXPECT_EQ(index.FindSeries("gpu"), kNoId);
    EXPECT_EQ(index.FindSeries(GpuKey(0) + "x"), kNoId);
  }
  SeriesIndex loaded;
  ASSERT_TRUE(loaded.Load(db.get()).ok());
  ASSERT_EQ(loaded.series_count(), static_cast<size_t>(kSeries));
  for (int i = 0; i < kSeries; ++i) {
    ASSERT_EQ(loaded.FindSeries(GpuKey(i)), uint32_t(i)) << i;
    EXPECT_EQ(loaded.series(i).canonical_key, GpuKey(i));
  }
  EXPECT_EQ(loaded.FindSeriesField(7, FieldName(4), 0, kFields),
            loaded.FindField("gpu", "field_4"));
}

// What a ten-field series of a fleet takes in the catalog: its key, its
// tags, its postings, its place in the key lookup and its cache of field
// ids. The lookup kept a copy of each key (110 bytes) and the cache a copy
// of each field name (40 bytes a field, grown to room for 16): 1,520 bytes
// a series before (this test adapted to the old engine), 784 after (glibc,
// 2026-11-29). Measured with glibc's allocator statistics (a sanitizer's
// allocator keeps none: skipped).
TEST(SeriesIndexTest, AFleetsTenFieldSeriesTakesUnderAKilobyte) {
  constexpr int kSeries = 20000;
  const auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  SeriesIndex index;
  leveldb::WriteBatch batch;
  AddFields(&index, &batch);
  const size_t before = in_use();
  for (int i = 0; i < kSeries; ++i) {
    const uint32_t id = index.AddSeries(GpuKey(i), &batch);
    for (int f = 0; f < kFields; ++f) index.FindSeriesField(id, FieldName(f), f, kFields);
    batch.Clear();  // the catalog's records, which a Db writes and drops
  }
  const size_t after = in_use();
  if (after <= before) GTEST_SKIP() << "no allocator statistics (a sanitizer's allocator)";
  const double per_series = static_cast<double>(after - before) / kSeries;
  EXPECT_LT(per_series, 1024) << "bytes a series";
}

}  // namespace
}  // namespace gpulse::engine
