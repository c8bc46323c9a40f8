// Column operations the head and the read path share: append, sort with
// last-write-wins de-duplication, range copy, and merging a newer column over
// an older one.
//
// Thread safety: pure functions over caller-owned columns.
#pragma once

#include <cstdint>

#include "engine/gpulse.h"

namespace gpulse::engine {

// Appends (ts, value). `value` must have the column's type.
void AppendValue(Column* column, int64_t ts, const FieldValueRef& value);

// Replaces the value of the last point (same timestamp written again).
void ReplaceLastValue(Column* column, const FieldValueRef& value);

// Sorts by timestamp, stably, and keeps only the last-written point of each
// timestamp: the one that came later in the column wins.
void SortAndDedup(Column* column);

// Removes the points with first <= ts <= last (both included), in any
// order, keeping the others in their order. Returns how many it removed.
size_t EraseRange(Column* column, int64_t first, int64_t last);

// Appends the points of sorted `src` with start <= ts < end to `dst`, which
// must have src's type.
void AppendRange(const Column& src, int64_t start, int64_t end, Column* dst);

// Merges sorted, de-duplicated `newer` over sorted, de-duplicated `*base`:
// on equal timestamps the newer value wins. Both must have the same type.
void MergeNewer(const Column& newer, Column* base);

}  // namespace gpulse::engine
