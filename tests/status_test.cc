#include "storage/status.h"

#include <gtest/gtest.h>

namespace gpulse {
namespace {

TEST(StatusTest, OkIsDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndContext) {
  Status s = Status::Corruption("bad checksum").WithContext("wal/000003.log offset 4096");
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.ToString(), "Corruption: wal/000003.log offset 4096: bad checksum");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad = Status::NotFound("no such series");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsNotFound());
}

}  // namespace
}  // namespace gpulse
