// The deterministic workload kill9_test's child writes and the test checks.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::test {

inline constexpr int kCrashGpus = 8;
inline constexpr int64_t kCrashMinuteNs = 60'000'000'000;

inline int64_t CrashUtil(int gpu, int64_t minute) { return (minute * 7 + gpu * 13) % 101; }
inline double CrashPower(int gpu, int64_t minute) { return 100.0 + (minute % 500) + gpu / 10.0; }

inline std::vector<Point> CrashBatch(int64_t minute) {
  std::vector<Point> batch;
  for (int gpu = 0; gpu < kCrashGpus; ++gpu) {
    Point p;
    p.measurement = "gpu";
    p.tags = {{"node", "crash-n1"}, {"gpu", std::to_string(gpu)}};
    p.fields = {{"util", CrashUtil(gpu, minute)}, {"power_w", CrashPower(gpu, minute)}};
    p.timestamp_ns = minute * kCrashMinuteNs;
    batch.push_back(std::move(p));
  }
  return batch;
}

}  // namespace gpulse::test
