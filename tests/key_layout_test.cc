#include "storage/key_layout.h"

#include <gtest/gtest.h>

namespace gpulse::storage {
namespace {

TEST(KeyLayoutTest, ChunkKeysSortBySeriesFieldThenTime) {
  const int64_t times[] = {INT64_MIN, -86400, -1, 0, 1, 86400, INT64_MAX};
  std::string previous;
  for (uint32_t series : {0u, 1u, 256u}) {
    for (uint32_t field : {0u, 7u}) {
      for (int64_t t : times) {
        for (uint16_t part : {uint16_t{0}, uint16_t{1}, uint16_t{256}, kMaxChunkPart}) {
          const std::string key = ChunkKey(kRawTier, series, field, t, part);
          EXPECT_LT(previous, key) << series << " " << field << " " << t << " " << part;
          previous = key;
          ChunkKeyParts parts;
          ASSERT_TRUE(ParseChunkKey(key, &parts));
          EXPECT_EQ(parts.series_id, series);
          EXPECT_EQ(parts.field_id, field);
          EXPECT_EQ(parts.window_start, t);
          EXPECT_EQ(parts.part, part);
        }
      }
    }
  }
  ChunkKeyParts parts;
  EXPECT_FALSE(ParseChunkKey("C123", &parts));
}

TEST(KeyLayoutTest, CanonicalSeriesKeyRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> tags = {{"gpu", "3"}, {"node", "n 1,=x"}};
  const std::string key = CanonicalSeriesKey("gpu", tags);
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> parsed;
  ASSERT_TRUE(ParseCanonicalSeriesKey(key, &measurement, &parsed));
  EXPECT_EQ(measurement, "gpu");
  EXPECT_EQ(parsed, tags);
  ASSERT_TRUE(ParseCanonicalSeriesKey("cpu", &measurement, &parsed));
  EXPECT_TRUE(parsed.empty());
  EXPECT_FALSE(ParseCanonicalSeriesKey(std::string("gpu\0node", 8), &measurement, &parsed));
}

TEST(KeyLayoutTest, IndexKeyRoundTrips) {
  IndexKeyParts parts;
  const std::string key = IndexKey("gpu", "sku", "H100", 42);
  ASSERT_TRUE(ParseIndexKey(key, &parts));
  EXPECT_EQ(parts.measurement, "gpu");
  EXPECT_EQ(parts.tag_key, "sku");
  EXPECT_EQ(parts.tag_value, "H100");
  EXPECT_EQ(parts.series_id, 42u);
}

TEST(KeyLayoutTest, WindowStartFloorsNegativeTimes) {
  EXPECT_EQ(WindowStart(0, 10), 0);
  EXPECT_EQ(WindowStart(9, 10), 0);
  EXPECT_EQ(WindowStart(10, 10), 10);
  EXPECT_EQ(WindowStart(-1, 10), -10);
  EXPECT_EQ(WindowStart(-10, 10), -10);
  EXPECT_EQ(WindowStart(INT64_MIN, 86'400'000'000'000), INT64_MIN);
  EXPECT_LE(WindowStart(INT64_MAX, 86'400'000'000'000), INT64_MAX);
}

}  // namespace
}  // namespace gpulse::storage
