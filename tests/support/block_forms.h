// The forms a tier-block decoder (rollups, tallies) must read, for its
// corruption tests: a tiny block that stays plain, a full one that
// compresses, and the full one's body stored plain.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/zstd_frame.h"

namespace gpulse::test {

// The plain form of a zstd-compressed block: the same body, uncompressed.
inline std::string UncompressedBlock(const std::string& block) {
  EXPECT_EQ(block[1], 1);
  std::string scratch;
  std::string_view body;
  EXPECT_TRUE(
      storage::OpenBlock(block, static_cast<uint8_t>(block[0]), 64 << 20, &scratch, &body).ok());
  return std::string{block[0], '\0'} + std::string(body);
}

struct BlockForms {
  std::string tiny, compressed, big_plain;
};

}  // namespace gpulse::test
