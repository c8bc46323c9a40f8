// Durations in nanoseconds, the unit every time in gpulse is written in, as
// the tests and benches spell their data's times.
#pragma once

#include <cstdint>

namespace gpulse::test {

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kDay = 24 * kHour;

}  // namespace gpulse::test
