// The wall clock in Unix nanoseconds: what now() means in queries, and what
// retention counts back from.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpulse::engine {

inline int64_t WallClockNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace gpulse::engine
