// Versions of what each measurement holds, by UTC day of the points'
// timestamps (Db::DataVersion). A reader that derived something from a day
// (the GPU-minute ledger keeps each day's) reads the versions first and may
// reuse what it derived while they stay the same.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gpulse::engine {

class DataVersions {
 public:
  static constexpr int64_t kDayNs = 86'400'000'000'000;
  // A measurement with more days touched than this forgets them and counts
  // as touched on every day (bounded memory; readers derive again).
  static constexpr size_t kMaxDays = 8192;

  DataVersions();

  // `touched` holds (measurement, timestamp) pairs of points that were
  // written; call after they can be read.
  void Touch(std::span<const std::pair<std::string_view, int64_t>> touched);
  // Every day of `measurement` (points deleted), or of every measurement.
  void TouchAll(std::string_view measurement);
  void TouchEverything();
  // Changes whenever points of `measurement` on the UTC day holding
  // `timestamp_ns` are written or deleted; each value is new to the
  // process, so two Dbs, or one opened twice, never share one.
  uint64_t Get(std::string_view measurement, int64_t timestamp_ns) const;
  // At least every version Get answers now: a version above it, later,
  // is of a change made after this call.
  static uint64_t Latest();

  static int64_t DayOf(int64_t timestamp_ns) {
    return timestamp_ns - (((timestamp_ns % kDayNs) + kDayNs) % kDayNs);
  }

 private:
  struct Measurement {
    uint64_t all = 0;                            // every day, from a delete
    std::unordered_map<int64_t, uint64_t> days;  // by day start
  };
  static uint64_t Next();
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  mutable std::mutex mu_;
  uint64_t base_;  // GUARDED_BY(mu_): every measurement and day
  // GUARDED_BY(mu_)
  std::unordered_map<std::string, Measurement, NameHash, std::equal_to<>> measurements_;
};

}  // namespace gpulse::engine
