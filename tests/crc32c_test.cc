#include "storage/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace gpulse::storage {
namespace {

TEST(Crc32cTest, StandardCheckValue) { EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u); }

// The test vectors of RFC 3720, appendix B.4.
TEST(Crc32cTest, Rfc3720Vectors) {
  EXPECT_EQ(crc32c::Value(""), 0u);
  EXPECT_EQ(crc32c::Value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Value(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c::Value(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c::Value(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsValueOfConcatenation) {
  const std::string data = "the quick brown fox jumps over the lazy dog 0123456789";
  for (size_t split = 0; split <= data.size(); ++split) {
    std::string_view all = data;
    EXPECT_EQ(crc32c::Extend(crc32c::Value(all.substr(0, split)), all.substr(split)),
              crc32c::Value(all))
        << "split at " << split;
  }
}

TEST(Crc32cTest, ValueDependsOnEveryByte) {
  EXPECT_NE(crc32c::Value("a"), crc32c::Value("b"));
  EXPECT_NE(crc32c::Value("foo"), crc32c::Value(std::string("foo\0", 4)));
}

TEST(Crc32cTest, HardwareAndPortablePathsAgree) {
  if (!crc32c::internal::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::string data;
  uint32_t seed = 12345;
  for (size_t n = 0; n < 300; ++n) {
    seed = seed * 1103515245 + 12345;
    data.push_back(static_cast<char>(seed >> 16));
    for (uint32_t start : {0u, 1u, 0xE3069283u}) {
      ASSERT_EQ(crc32c::internal::ExtendHardware(start, data),
                crc32c::internal::ExtendPortable(start, data))
          << "length " << n + 1;
    }
  }
}

TEST(Crc32cTest, MaskRoundTripsAndChangesTheValue) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    EXPECT_NE(crc32c::Mask(crc), crc);
    EXPECT_NE(crc32c::Mask(crc32c::Mask(crc)), crc);
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
    EXPECT_EQ(crc32c::Unmask(crc32c::Unmask(crc32c::Mask(crc32c::Mask(crc)))), crc);
  }
}

}  // namespace
}  // namespace gpulse::storage
