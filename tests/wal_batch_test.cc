#include "engine/wal_batch.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpulse::engine {
namespace {

TEST(WalBatchTest, RoundTripsEveryType) {
  const std::string key = std::string("gpu\0node\0n1", 11);
  const std::string text("job-\xc3\xa9\0x", 8);
  const std::vector<FieldRef> first = {{"f", -0.0}, {"i", INT64_MIN}, {"u", UINT64_MAX}};
  const std::vector<FieldRef> second = {{"b", true}, {"s", std::string_view(text)}};
  std::vector<PointView> points = {{key, -7, first}, {key, INT64_MAX, second}};
  std::string record;
  EncodeWalBatch(points, &record);
  DecodedBatch batch;
  ASSERT_TRUE(DecodeWalBatch(record, &batch).ok());
  const std::vector<PointView>& decoded = batch.points;
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].series_key, key);
  EXPECT_EQ(decoded[0].timestamp_ns, -7);
  EXPECT_TRUE(std::signbit(std::get<double>(decoded[0].fields[0].value)));
  EXPECT_EQ(std::get<int64_t>(decoded[0].fields[1].value), INT64_MIN);
  EXPECT_EQ(std::get<uint64_t>(decoded[0].fields[2].value), UINT64_MAX);
  EXPECT_EQ(decoded[1].timestamp_ns, INT64_MAX);
  EXPECT_EQ(std::get<bool>(decoded[1].fields[0].value), true);
  EXPECT_EQ(std::get<std::string_view>(decoded[1].fields[1].value), text);
}

TEST(WalBatchTest, EveryTruncationIsCorruptionNotACrash) {
  const std::vector<FieldRef> fields = {{"util", int64_t{93}}, {"job", std::string_view("train")}};
  std::string record;
  EncodeWalBatch({{"gpu", 1, fields}}, &record);
  DecodedBatch decoded;
  for (size_t n = 0; n < record.size(); ++n) {
    EXPECT_TRUE(DecodeWalBatch(record.substr(0, n), &decoded).IsCorruption()) << n;
  }
  EXPECT_TRUE(DecodeWalBatch(record + "x", &decoded).IsCorruption());
}

}  // namespace
}  // namespace gpulse::engine
