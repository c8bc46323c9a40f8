// Aggregate states: what a query keeps per group, bucket and aggregate call
// while points stream past, and how two partial states (from two worker
// threads, or two series) merge. Each state folds runs of points of one
// series column at a time, so the per-point work is a tight loop over a typed
// array with no per-point dispatch.
//
// Thread safety: a state belongs to one thread until it is merged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "query/plan/agg_spec.h"
#include "query/runtime/result.h"

namespace gpulse::query {

class AggState {
 public:
  virtual ~AggState() = default;
  // Folds points [begin, end) of `c`, a time-ordered column of one series.
  virtual void AddRange(const Column& c, size_t begin, size_t end) = 0;
  // Folds the points of `c` at the ascending positions idx[0..n).
  virtual void AddIndexes(const Column& c, const uint32_t* idx, size_t n) = 0;
  // Folds tier rows [begin, end) of `rows` (the numeric kinds a tier can
  // answer; see ChooseTier in select.cc). A state is fed rows or points,
  // never both.
  virtual void AddRollups(const RollupColumn& rows, size_t begin, size_t end) {
    (void)rows, (void)begin, (void)end;
  }
  // Counts `n` more points without their values: count() of a string
  // field fed from tier tallies (storage/tally.h).
  virtual void AddCount(uint64_t n) { (void)n; }
  // Folds `other` (same spec) into this one; `other` may be left empty.
  virtual void Merge(AggState* other) = 0;
  virtual bool empty() const = 0;
  // The answer; null when there is none (no points, stddev of one point).
  // The first call does the work (a percentile's selection); later calls
  // return the same value. No Add or Merge may follow it.
  virtual QueryValue Result() = 0;
  // The selected point's time (selectors with need_time), else INT64_MIN.
  virtual int64_t SelectedTime() { return INT64_MIN; }
  // Multi-row functions (top, bottom, distinct): (time, value) pairs in
  // output order; time is INT64_MIN when the bucket's time applies.
  virtual void Rows(std::vector<std::pair<int64_t, QueryValue>>* out) { (void)out; }
};

std::unique_ptr<AggState> NewAggState(const AggSpec& spec);

}  // namespace gpulse::query
