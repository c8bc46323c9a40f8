// Head: the points not yet in chunks, per series and field, in memory.
//
// Writes append to a column per (series, field). In-order points (the
// common case: agents report every minute) are a push_back; a point that
// repeats the last timestamp replaces its value; an earlier point is appended
// and the column is marked unsorted, to be sorted (last write wins) when the
// head is sealed for a flush or copied out by a reader.
//
// Thread safety: none inside. DbImpl's state lock guards the mutable head;
// once sealed (Seal()), a head is immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::engine {

class Head {
 public:
  struct Entry {
    uint32_t series_id = 0;
    uint32_t field_id = 0;
    Column column;
    bool sorted = true;
  };

  // Adds one value. `type` is the field's catalog type and matches `value`.
  // `position_hint` is where the column likely is among the series' columns
  // (the field's position in its point: agents send fields in a fixed order,
  // so the columns are created in it); a wrong hint only costs a scan.
  void Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
              const FieldValueRef& value, size_t position_hint = 0);

  // Ask the CPU to start loading what appends to `series_id` will touch, a
  // few points before they come: the series' column entries, and (once
  // those are in) the ends of their vectors. A fleet batch writes every
  // series once per minute, so between two appends to a column thousands of
  // others are written and its ends have left the cache; each append then
  // waited on two misses (perf: 65% of Append's time on one load). Neither
  // call changes anything.
  void PrefetchEntries(uint32_t series_id) const;
  void PrefetchEnds(uint32_t series_id) const;

  // Appends the points of (series, field) in [start, end), sorted and
  // de-duplicated, to `out` (which has the field's type).
  void CopyRange(uint32_t series_id, uint32_t field_id, int64_t start, int64_t end,
                 Column* out) const;

  // Removes the points of every field of `series_id` with first <= ts <=
  // last. The memory they took stays charged until the head is flushed.
  void Erase(uint32_t series_id, int64_t first, int64_t last);

  // Sorts every unsorted column; afterwards the head must not change.
  void Seal();

  uint64_t bytes() const { return bytes_; }
  uint64_t values() const { return values_; }
  bool empty() const { return values_ == 0; }
  int64_t min_ts() const { return min_ts_; }
  int64_t max_ts() const { return max_ts_; }

  // Every column, for the flush. Valid until the head is destroyed.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const std::vector<Entry>& columns : series_) {
      for (const Entry& entry : columns) fn(entry);
    }
  }

 private:
  // The column of (series, field), or nullptr.
  const Entry* Find(uint32_t series_id, uint32_t field_id) const;

  // Indexed by series id (ids are dense); each series holds its few fields'
  // columns, found by a short scan: cheaper than hashing on every value.
  std::vector<std::vector<Entry>> series_;
  uint64_t bytes_ = 0;
  uint64_t values_ = 0;
  int64_t min_ts_ = INT64_MAX;
  int64_t max_ts_ = INT64_MIN;
};

}  // namespace gpulse::engine
