// Versions of what each measurement holds, by ten-minute slice of the
// points' timestamps (Db::DataVersion). A reader that derived something from
// a time range (the GPU-minute ledger keeps spans of hours, and ROLLOUTS'
// of ten minutes) reads the versions first and may reuse what it derived
// while they stay the same. Ten minutes, not an hour: agents write the
// minute under way, and a span that ended ten minutes ago must not look
// changed by it.
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
  static constexpr int64_t kSliceNs = 600'000'000'000;
  // A measurement with more slices touched than this (two years and a
  // half; about 6 MB) forgets them and counts as touched in every slice
  // (bounded memory; readers derive again).
  static constexpr size_t kMaxSlices = 131072;

  DataVersions();

  // `touched` holds (measurement, timestamp) pairs of points that were
  // written; call after they can be read.
  void Touch(std::span<const std::pair<std::string_view, int64_t>> touched);
  // Every slice of `measurement` (points deleted), or of every measurement.
  void TouchAll(std::string_view measurement);
  void TouchEverything();
  // Changes whenever points of `measurement` in a slice that [start_ns,
  // end_ns) meets are written or deleted; each value is new to the
  // process, so two Dbs, or one opened twice, never share one.
  uint64_t Get(std::string_view measurement, int64_t start_ns, int64_t end_ns) const;
  // At least every version Get answers now: a version above it, later,
  // is of a change made after this call.
  static uint64_t Latest();

  // The start of the slice holding `timestamp_ns` (INT64_MIN for the first
  // slice, which starts before it).
  static int64_t SliceOf(int64_t timestamp_ns) {
    const int64_t into = ((timestamp_ns % kSliceNs) + kSliceNs) % kSliceNs;
    return timestamp_ns < INT64_MIN + into ? INT64_MIN : timestamp_ns - into;
  }

 private:
  struct Measurement {
    uint64_t all = 0;                    // every slice, from a delete
    std::map<int64_t, uint64_t> slices;  // by slice start
  };
  static uint64_t Next();
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  mutable Mutex mu_;
  uint64_t base_ GPULSE_GUARDED_BY(mu_);  // every measurement and slice
  std::unordered_map<std::string, Measurement, NameHash, std::equal_to<>> measurements_
      GPULSE_GUARDED_BY(mu_);
};

}  // namespace gpulse::engine
