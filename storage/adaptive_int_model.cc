#include "storage/adaptive_int_model.h"

#include <cmath>
#include <cstring>

namespace gpulse::storage {

namespace {

// Learning cost per distinct symbol of a histogram, in bits: what an adaptive
// coder pays over the empirical entropy while its probabilities converge.
// Fitted on the fleet data; only the ranking of candidates depends on it.
constexpr double kLearnBitsPerSymbol = 4.0;

// c * log2(c) for small counts, the inner term of every entropy estimate.
constexpr uint32_t kCLogCSize = 4096;

const float* CLogCTable() {
  static const float* table = [] {
    static float t[kCLogCSize];
    t[0] = 0;
    for (uint32_t c = 1; c < kCLogCSize; ++c) t[c] = static_cast<float>(c * std::log2(c));
    return t;
  }();
  return table;
}

double CLogC(uint64_t c, const float* table) {
  if (c < kCLogCSize) return table[c];
  double d = static_cast<double>(c);
  return d * std::log2(d);
}

}  // namespace

AdaptiveIntModel::AdaptiveIntModel() {
  static const Tables kInitial{};
  std::memcpy(&tables_, &kInitial, sizeof(Tables));
}

double AdaptiveIntModel::HistogramBits(const uint32_t* counts, int size) {
  const float* table = CLogCTable();
  uint64_t total = 0;
  double sum = 0;
  int symbols = 0;
  for (int i = 0; i < size; ++i) {
    if (counts[i] == 0) continue;
    total += counts[i];
    sum += CLogC(counts[i], table);
    ++symbols;
  }
  if (total == 0) return 0;
  return CLogC(total, table) - sum + kLearnBitsPerSymbol * symbols;
}

double AdaptiveIntModel::EstimateBits(std::span<const uint64_t> values) {
  uint32_t lengths[kContexts][65] = {};
  uint32_t mantissas[65][1 << kMantissaBits];  // a row is cleared on first use
  bool seen[65] = {};
  uint64_t raw_bits = 0;
  int context = 0;
  for (uint64_t v : values) {
    int length = BitWidth(v);
    ++lengths[context][length];
    if (length >= 2) {
      if (!seen[length]) {
        seen[length] = true;
        std::memset(mantissas[length], 0, sizeof(mantissas[length]));
      }
      int below = length - 1;
      int modeled = below < kMantissaBits ? below : kMantissaBits;
      int raw = below - modeled;
      ++mantissas[length][(v >> raw) & ((1u << modeled) - 1)];
      raw_bits += static_cast<uint64_t>(raw);
    }
    context = length < kContexts ? length : kContexts - 1;
  }
  double bits = static_cast<double>(raw_bits);
  for (int c = 0; c < kContexts; ++c) bits += HistogramBits(lengths[c], 65);
  for (int length = 2; length <= 64; ++length) {
    if (!seen[length]) continue;
    int below = length - 1;
    bits += HistogramBits(mantissas[length], 1 << (below < kMantissaBits ? below : kMantissaBits));
  }
  return bits;
}

}  // namespace gpulse::storage
