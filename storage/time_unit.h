// Time units of the on-disk formats: rollup blocks write bucket starts and
// offsets, chunks their timestamps, in the largest of these that divides
// every value, so that minute data costs a byte where nanoseconds cost six
// (docs/format/rollups.md, docs/format/chunks.md). A unit is stored as its
// index here; the list is never reordered.
//
// Thread safety: constants and a pure function.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpulse::storage {

// 1 ns, 1 us, 1 ms, 1 s, 1 min, 5 min, 1 h, 1 d.
inline constexpr int64_t kTimeUnits[] = {1,
                                         1'000,
                                         1'000'000,
                                         1'000'000'000,
                                         60'000'000'000,
                                         300'000'000'000,
                                         3'600'000'000'000,
                                         86'400'000'000'000};
inline constexpr size_t kTimeUnitCount = sizeof(kTimeUnits) / sizeof(kTimeUnits[0]);

// The index of the largest of kTimeUnits dividing `v`, at most `unit` (an
// index).
inline size_t NarrowTimeUnit(int64_t v, size_t unit) {
  while (unit > 0 && v % kTimeUnits[unit] != 0) --unit;
  return unit;
}

// Exact division of unsigned 64-bit values by one of kTimeUnits without a
// divide instruction (a chunk's encoder tests and divides every timestamp):
// d = m * 2^shift with m odd; v is a multiple of d when its low `shift` bits
// are 0 and (v >> shift) * m^-1 (mod 2^64) is at most (2^64 - 1) / m, and
// that product is then v / d (Granlund and Montgomery, 1994).
struct ExactTimeDivisor {
  int shift = 0;
  uint64_t inverse = 1;  // of m, modulo 2^64
  uint64_t limit = UINT64_MAX;

  constexpr explicit ExactTimeDivisor(uint64_t d) {
    while ((d & 1) == 0) {
      d >>= 1;
      ++shift;
    }
    uint64_t x = d;  // right in 3 bits (d * d = 1 mod 8); each step doubles them
    for (int i = 0; i < 5; ++i) x *= 2 - d * x;
    inverse = x;
    limit = UINT64_MAX / d;
  }
  constexpr bool Divides(uint64_t v) const {
    return (v & ((uint64_t{1} << shift) - 1)) == 0 && (v >> shift) * inverse <= limit;
  }
  // v / d, for v a multiple of d.
  constexpr uint64_t Divide(uint64_t v) const { return (v >> shift) * inverse; }
};

inline constexpr ExactTimeDivisor kTimeDivisors[] = {
    ExactTimeDivisor(kTimeUnits[0]), ExactTimeDivisor(kTimeUnits[1]),
    ExactTimeDivisor(kTimeUnits[2]), ExactTimeDivisor(kTimeUnits[3]),
    ExactTimeDivisor(kTimeUnits[4]), ExactTimeDivisor(kTimeUnits[5]),
    ExactTimeDivisor(kTimeUnits[6]), ExactTimeDivisor(kTimeUnits[7])};
static_assert(kTimeDivisors[4].Divide(120'000'000'000) == 2);
static_assert(!kTimeDivisors[3].Divides(1'500'000'000) && kTimeDivisors[3].Divides(3'000'000'000));

}  // namespace gpulse::storage
