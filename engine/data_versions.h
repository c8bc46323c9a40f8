// Versions of what each measurement holds, by UTC hour of the points'
// timestamps (Db::DataVersion). A reader that derived something from a time
// range (the GPU-minute ledger keeps spans of hours) reads the versions
// first and may reuse what it derived while they stay the same.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "storage/mutex.h"

namespace gpulse::engine {

class DataVersions {
 public:
  static constexpr int64_t kHourNs = 3'600'000'000'000;
  // A measurement with more hours touched than this (seven years and a
  // half) forgets them and counts as touched in every hour (bounded memory;
  // readers derive again).
  static constexpr size_t kMaxHours = 65536;

  DataVersions();

  // `touched` holds (measurement, timestamp) pairs of points that were
  // written; call after they can be read.
  void Touch(std::span<const std::pair<std::string_view, int64_t>> touched);
  // Every hour of `measurement` (points deleted), or of every measurement.
  void TouchAll(std::string_view measurement);
  void TouchEverything();
  // Changes whenever points of `measurement` in an hour that [start_ns,
  // end_ns) meets are written or deleted; each value is new to the
  // process, so two Dbs, or one opened twice, never share one.
  uint64_t Get(std::string_view measurement, int64_t start_ns, int64_t end_ns) const;
  // At least every version Get answers now: a version above it, later,
  // is of a change made after this call.
  static uint64_t Latest();

  // The start of the hour holding `timestamp_ns` (INT64_MIN for the first
  // hour, which starts before it).
  static int64_t HourOf(int64_t timestamp_ns) {
    const int64_t into = ((timestamp_ns % kHourNs) + kHourNs) % kHourNs;
    return timestamp_ns < INT64_MIN + into ? INT64_MIN : timestamp_ns - into;
  }

 private:
  struct Measurement {
    uint64_t all = 0;                   // every hour, from a delete
    std::map<int64_t, uint64_t> hours;  // by hour start
  };
  static uint64_t Next();
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  mutable Mutex mu_;
  uint64_t base_ GPULSE_GUARDED_BY(mu_);  // every measurement and hour
  std::unordered_map<std::string, Measurement, NameHash, std::equal_to<>> measurements_
      GPULSE_GUARDED_BY(mu_);
};

}  // namespace gpulse::engine
