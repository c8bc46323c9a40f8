// Range functions folded where the samples are read, without handing the
// evaluator a series of samples (docs/promql.md, "How a query runs"): sum,
// count, avg, min, max, last and present _over_time of a selector's
// windows, from the raw samples (FoldSamples, exactly as functions.cc
// computes them) or from the tiers (FoldRows).
//
// From the tiers (docs/promql.md, "Long ranges and the tiers"): a window's
// fold follows from the rows of the tier buckets it holds whole (count, sum,
// min, max, first and last with their times; storage/rollup.h), with no raw
// sample read. A bucket at a window's edge counts too when the rows say
// exactly which of its samples are inside: the window ends at its first
// sample's millisecond, or starts at its last's; and for last and present,
// a bucket cut by the window's start whose last sample is inside, or for
// present one cut by its end whose first is. Any other cut bucket (its
// samples on both sides of an edge) cannot be answered from its row.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "query/promeval/value.h"
#include "storage/rollup.h"

namespace gpulse::query::promeval {

enum class WindowFold { kSum, kCount, kAvg, kMin, kMax, kLast, kPresent };

// The fold of a range function the tiers can answer, or none.
std::optional<WindowFold> FoldOf(std::string_view function);

// The rollup parts a fold reads (storage::RollupParts): the edges' first
// and last always, sums for sum and avg (and to see NaN and infinities,
// which send a series back to its raw samples).
uint32_t FoldParts(WindowFold fold);

// Folds window [start_ms, end_ms] (both included) over `rows` (one
// series-field's rows, buckets ascending; [from, rows.size()) is searched,
// and *from advances past rows wholly before the window, so that windows
// asked in ascending order cost one pass). *has is false when no sample is
// inside. Returns false when the rows cannot answer: a bucket the window
// cuts, or a sum that is not finite (a NaN or an infinity among the
// samples, where Prometheus' order of operations decides the answer).
bool FoldRows(const storage::RollupColumn& rows, size_t* from, int64_t start_ms, int64_t end_ms,
              WindowFold fold, double* out, bool* has);

// Folds each window [ends[k] - range, ends[k]] (ms) of a series' samples
// (times in milliseconds, ascending, no two in one millisecond, no stale
// marker) into out's step k (out has ends.size() steps), as the range
// function of that name computes it.
void FoldSamples(std::span<const int64_t> times, std::span<const double> values,
                 std::span<const int64_t> ends, int64_t range, WindowFold fold, StepSeries* out);

// As FoldSamples, over a stored column as read: times in nanoseconds
// (ascending), values of the column's own type (double, int64_t, uint64_t,
// or uint8_t for booleans), with no copy to floats. min, max, last, count
// and present fold any of them (the float of the fold is the fold of the
// floats); sum and avg only doubles (false for another type). False, with
// `out` partly written, also where two samples of a window lie less than a
// millisecond apart: the caller then folds the samples Select keeps (the
// later of a millisecond) with FoldSamples.
template <typename T>
bool FoldStoredSamples(std::span<const int64_t> times_ns, std::span<const T> values,
                       std::span<const int64_t> ends, int64_t range, WindowFold fold,
                       StepSeries* out);

}  // namespace gpulse::query::promeval
