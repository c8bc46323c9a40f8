// Head: the points not yet in chunks, per series and field, in memory,
// packed.
//
// Each (series, field) column keeps its newest point as it came (a point
// that repeats its timestamp replaces its value), the points before it
// since the last packed block as an open run encoded bit by bit as they
// come, and a chain of packed blocks before that. Timestamps take their
// step's change from the step before (a bit a point at a steady interval),
// values their change from the value before (a bit when it repeats), so a
// minute-grain gauge takes 1 to 2 bytes a point in the open run. An earlier
// point is written too and marks the column unsorted, to be sorted (last
// write wins) when copied out: by a reader, or by the flush.
//
// When the open run holds 64 points and the next comes, they are packed
// into a block of their own: the first timestamp, the changes of step, and
// the values as a frame of reference (least value, bit width, offsets;
// doubles as decimals, or XOR the one before with trailing zeros shifted
// out). A minute-grain gauge packs to a byte or two a value.
//
// What a column costs before its points: its entry (64 bytes) and, from
// its second point, an open run's header (48 bytes) and a buffer of 32
// bytes, grown when a point's code does not fit to the room the run's
// points so far project for 64 (a gauge's hour of minutes fits in 64
// bytes). An open run is allocated on its own and freed when it grows:
// every column of a fleet grows at about the same minute, so an outgrown
// run kept for reuse waited for the flush (88 bytes a column, 31 MiB of
// `gpulse import`'s peak at 100,000 GPUs). Packed blocks are cut from slabs
// of 4 KiB to 256 KiB the head owns and frees whole. The head is charged
// for its slabs and its open runs.
//
// A value's word is a double's bits, an integer, 0 or 1, or for a string the
// index of its text in the head's string list.
//
// Thread safety: none inside. DbImpl's state lock guards the mutable head;
// once swapped out for a flush, a head is immutable and may be read from
// any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::engine {

class Head {
 public:
  struct Slot;
  struct Open;
  struct Packed;

  // One (series, field) column.
  struct Entry {
    uint32_t series_id = 0;
    uint32_t field_id = 0;
    FieldType type = FieldType::kFloat;
    bool sorted = true;
    uint32_t size = 0;       // points in the column
    int64_t last_ts = 0;     // of the newest point, when size > 0
    uint64_t last_word = 0;  // ... and its value's word
    // The packed blocks, a ring: the newest, whose next is the oldest (one
    // pointer a column fewer than a head and a tail: 8 MB a head at 100,000
    // GPUs).
    Packed* last = nullptr;
    Open* open = nullptr;  // the points after the chain but the newest
  };

  Head();
  ~Head();
  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // Adds one value. `type` is the field's catalog type and matches `value`.
  // `position_hint` is where the column likely is among the series' columns
  // (the field's position in its point: agents send fields in a fixed order,
  // so the columns are created in it); a wrong hint only costs a scan.
  // `fields_hint` is how many fields the point has: a series' first column
  // makes room for that many, where growing one by one left a ten-field
  // series room for sixteen (then 56 bytes each; 34 MB a head at 100,000 GPUs).
  void Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
              const FieldValueRef& value, size_t position_hint = 0, size_t fields_hint = 0);

  // Ask the CPU to start loading what appends to `series_id` will touch, a
  // few points before they come: the series' column entries, and (once
  // those are in) the slots their next points go to. A fleet batch writes
  // every series once per minute, so between two appends to a column
  // thousands of others are written and its end has left the cache. Neither
  // call changes anything.
  void PrefetchEntries(uint32_t series_id) const;
  void PrefetchEnds(uint32_t series_id) const;

  // Appends the points of (series, field) in [start, end), sorted and
  // de-duplicated, to `out` (which has the field's type).
  void CopyRange(uint32_t series_id, uint32_t field_id, int64_t start, int64_t end,
                 Column* out) const;

  // Appends every point of `entry` (one of this head's) to `out`, which has
  // the entry's type, in the column's order (sorted and de-duplicated when
  // entry.sorted, else as written: see SortAndDedup).
  void AppendColumn(const Entry& entry, Column* out) const;

  // Removes the points of every field of `series_id` with first <= ts <=
  // last. The memory they took stays charged until the head is flushed.
  void Erase(uint32_t series_id, int64_t first, int64_t last);

  // Memory taken: slabs, entries and string text.
  uint64_t bytes() const { return bytes_; }
  uint64_t values() const { return values_; }
  bool empty() const { return values_ == 0; }
  int64_t min_ts() const { return min_ts_; }
  int64_t max_ts() const { return max_ts_; }

  // Every column, for the flush. Valid until the head is destroyed.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForEachIn(0, series_.size(), fn);
  }
  // The columns of the series with ids in [first, last); series_slots()
  // bounds the ids that have any.
  template <typename Fn>
  void ForEachIn(size_t first, size_t last, Fn&& fn) const {
    for (size_t s = first; s < last && s < series_.size(); ++s) {
      for (const Entry& entry : series_[s]) fn(entry);
    }
  }
  size_t series_slots() const { return series_.size(); }

 private:
  // The column of (series, field), or nullptr.
  const Entry* Find(uint32_t series_id, uint32_t field_id) const;
  // Where (series, field)'s column is in series_[series_id], or its size
  // when the series has none; `hint` is tried first.
  size_t IndexOf(uint32_t series_id, uint32_t field_id, size_t hint) const;
  // `bytes` (rounded up to 8) cut from the newest slab, or a new one.
  void* Allocate(size_t bytes);
  // An empty open run with `capacity` bytes of room, and its release.
  Open* NewOpen(uint32_t capacity);
  void FreeOpen(Open* run);
  // Encodes `slot` after the column's open run, making room (a bigger
  // buffer, or the full run packed onto the end of the chain first).
  void Encode(Entry* entry, const Slot& slot);
  // Packs the full open run onto the end of the chain and empties it.
  void PackOpen(Entry* entry);
  // Writes `slot` after the column's newest point.
  void Push(Entry* entry, const Slot& slot);
  // Replaces the column's points with `slots`, in that order.
  void Rebuild(Entry* entry, const std::vector<Slot>& slots);
  // The word that stores `value` (a string's text joins strings_).
  uint64_t Word(const FieldValueRef& value);
  // The open run's points and the newest, decoded into `out` (room for
  // kMostSlots + 1); returns how many.
  static uint32_t DecodeOpen(const Entry& entry, Slot* out);
  // The column's packed blocks, oldest first: for (p = Oldest(e); p; p =
  // Newer(e, p)).
  static const Packed* Oldest(const Entry& entry);
  static const Packed* Newer(const Entry& entry, const Packed* p);
  // Calls fn(slots, n) for each run of the column's points, in order.
  template <typename Fn>
  void ForEachRun(const Entry& entry, Fn&& fn) const;
  // Appends n slots of a column of `type` to `out` as typed values.
  void AppendSlots(FieldType type, const Slot* slots, uint32_t n, Column* out) const;

  // Indexed by series id (ids are dense); each series holds its few fields'
  // columns, found by a short scan: cheaper than hashing on every value.
  std::vector<std::vector<Entry>> series_;
  // The columns of wide series (more than kScanUpTo fields), by series id in
  // the high and field id in the low 32 bits: a scan of 100,000 fields for
  // each value made one wide point cost seconds.
  static constexpr size_t kScanUpTo = 64;
  std::unordered_map<uint64_t, uint32_t> wide_;
  std::vector<std::unique_ptr<std::byte[]>> slabs_;
  size_t slab_size_ = 0;            // of the newest slab
  std::byte* slab_free_ = nullptr;  // its unused room
  size_t slab_left_ = 0;
  // Open runs' sizes: 32 bytes of room doubled at most kOpenClasses - 1
  // times.
  static constexpr int kOpenClasses = 7;
  std::vector<std::string> strings_;
  uint64_t bytes_ = 0;
  uint64_t values_ = 0;
  int64_t min_ts_ = INT64_MAX;
  int64_t max_ts_ = INT64_MIN;
};

}  // namespace gpulse::engine
