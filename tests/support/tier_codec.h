// What the tier codec tests (rollup_test, tally_test) share: the time
// constants, the bucket a timestamp should land in, minute grids, and the
// forms a block decoder must read for its corruption tests: a tiny block
// that stays plain, a full one that compresses, and the full one's body
// stored plain.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "storage/zstd_frame.h"
#include "tests/support/time_units.h"

namespace gpulse::test {

constexpr int64_t k5m = 5 * kMinute;
constexpr int64_t k1h = 60 * kMinute;
constexpr int64_t k1d = 24 * k1h;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// The window of `width` that holds ts, by floor division, clamped to
// INT64_MIN where the window would start below the int64 range.
inline int64_t ExpectedBucket(int64_t ts, int64_t width) {
  const __int128 rem = ((static_cast<__int128>(ts) % width) + width) % width;
  const __int128 start = static_cast<__int128>(ts) - rem;
  return start < kI64Min ? kI64Min : static_cast<int64_t>(start);
}

// Minute points from `start` over `minutes`, except the minutes `skip` names.
template <typename Skip>
std::vector<int64_t> MinutePoints(int64_t start, int minutes, Skip skip) {
  std::vector<int64_t> ts;
  for (int i = 0; i < minutes; ++i) {
    if (!skip(i)) ts.push_back(start + i * kMinute);
  }
  return ts;
}

// The plain form of a zstd-compressed block (stored without the frame's magic
// number, as blocks are written): the same body, uncompressed.
inline std::string UncompressedBlock(const std::string& block) {
  EXPECT_EQ(block[1], 2);
  std::string scratch;
  std::string_view body;
  EXPECT_TRUE(
      storage::OpenBlock(block, static_cast<uint8_t>(block[0]), 64 << 20, nullptr, &scratch, &body)
          .ok());
  return std::string{block[0], '\0'} + std::string(body);
}

struct BlockForms {
  std::string tiny, compressed, big_plain;
};

}  // namespace gpulse::test
