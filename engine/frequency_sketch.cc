#include "engine/frequency_sketch.h"

#include <algorithm>
#include <bit>

namespace gpulse::engine {

namespace {
constexpr int kWays = 4;
constexpr uint8_t kMaxCount = 15;
}  // namespace

void FrequencySketch::Resize(size_t keys) {
  const size_t size = std::bit_ceil(std::max<size_t>(4096, keys * kWays));
  table_.assign(size, 0);
  block_mask_ = size / 64 - 1;
  additions_ = 0;
  sample_ = 10 * size / kWays;
}

void FrequencySketch::Add(uint64_t hash) {
  if (table_.empty()) return;
  const int least = Estimate(hash);
  if (least < kMaxCount) {
    for (int i = 0; i < kWays; ++i) {
      uint8_t& c = table_[Slot(hash, i)];
      if (c == least) ++c;
    }
  }
  if (++additions_ >= sample_) Halve();
}

int FrequencySketch::Estimate(uint64_t hash) const {
  if (table_.empty()) return 0;
  int least = kMaxCount;
  for (int i = 0; i < kWays; ++i) least = std::min<int>(least, table_[Slot(hash, i)]);
  return least;
}

void FrequencySketch::Halve() {
  for (uint8_t& c : table_) c >>= 1;
  additions_ /= 2;
}

}  // namespace gpulse::engine
