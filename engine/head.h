// Head: the points not yet in chunks, per series and field, in memory.
//
// Each (series, field) column is a chain of blocks of (timestamp, value)
// slots, the blocks cut from slabs the head owns. In-order points (the
// common case: agents report every minute) are one slot written at the end
// of the chain; a point that repeats the last timestamp replaces its value;
// an earlier point is appended and the column is marked unsorted, to be
// sorted (last write wins) when the head is sealed for a flush or copied out
// by a reader.
//
// Why blocks and slabs rather than a vector per column: a growing vector
// copies every value several times as it grows, leaves the unused end of
// its last growth, and its freed buffers, sized for one column, strand heap
// memory once the head is gone (perf and malloc_stats on the fleet load:
// 5% of the server's CPU in the copies and their mallocs, 46 MB of the heap
// free but held at the end of the load). A slot is written once; a slab is
// freed whole with its head and is the right size for the next head's.
//
// A value takes one 8-byte word: a double's bits, an integer, 0 or 1, or
// for a string the index of its text in the head's string list.
//
// Thread safety: none inside. DbImpl's state lock guards the mutable head;
// once sealed (Seal()), a head is immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::engine {

class Head {
 public:
  struct Block;

  // One (series, field) column.
  struct Entry {
    uint32_t series_id = 0;
    uint32_t field_id = 0;
    FieldType type = FieldType::kFloat;
    bool sorted = true;
    uint32_t size = 0;    // points in the chain
    int64_t last_ts = 0;  // of the last slot, when size > 0
    Block* first = nullptr;
    Block* last = nullptr;
  };

  Head() = default;
  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // Adds one value. `type` is the field's catalog type and matches `value`.
  // `position_hint` is where the column likely is among the series' columns
  // (the field's position in its point: agents send fields in a fixed order,
  // so the columns are created in it); a wrong hint only costs a scan.
  void Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
              const FieldValueRef& value, size_t position_hint = 0);

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
  // the entry's type, in the chain's order: sorted once the head is sealed.
  void AppendColumn(const Entry& entry, Column* out) const;

  // Removes the points of every field of `series_id` with first <= ts <=
  // last. The memory they took stays charged until the head is flushed.
  void Erase(uint32_t series_id, int64_t first, int64_t last);

  // Sorts every unsorted column; afterwards the head must not change.
  void Seal();

  // Memory taken: slabs, entries and string text.
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
  // A new block for `entry`'s chain, linked at its end.
  Block* Grow(Entry* entry);
  // The word that stores `value` (a string's text joins strings_).
  uint64_t Word(const FieldValueRef& value);
  // Appends slots [from, to) of `block` to `out` as typed values.
  void AppendSlots(const Block& block, uint32_t from, uint32_t to, Column* out) const;

  // Indexed by series id (ids are dense); each series holds its few fields'
  // columns, found by a short scan: cheaper than hashing on every value.
  std::vector<std::vector<Entry>> series_;
  std::vector<std::unique_ptr<std::byte[]>> slabs_;
  size_t slab_size_ = 0;            // of the newest slab
  std::byte* slab_free_ = nullptr;  // its unused room
  size_t slab_left_ = 0;
  std::vector<std::string> strings_;
  uint64_t bytes_ = 0;
  uint64_t values_ = 0;
  int64_t min_ts_ = INT64_MAX;
  int64_t max_ts_ = INT64_MIN;
};

}  // namespace gpulse::engine
