// Cells: the aggregate states of one group as one flat array, for the
// common case where every aggregate of a query folds into a fixed-size
// record (count, sum, mean, min, max, spread, first, last over a numeric
// field) and the buckets are fixed-width over a known range.
//
// Why: the general path (AggState, aggregate.h) holds a heap object per
// group, bucket and aggregate. A 24-hour query at 5-minute grain over a
// fleet makes tens of thousands of them, and their allocation, virtual calls
// and frees cost more than folding the points. Here a bucket is an index
// (one division), a state is a 56-byte record in an array allocated once per
// group, and a run of points of one bucket folds in a loop specialised for
// the aggregate and the value type.
//
// The answers equal AggState's bit for bit: the same per-run partial sums,
// the same tie rules (min/max keep the earliest point, first/last the point
// folded first on equal times), the same typed integer sums.
//
// Thread safety: a Cells belongs to one thread until it is merged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/gpulse.h"
#include "query/exec/aggregate.h"
#include "query/plan/buckets.h"
#include "query/runtime/result.h"
#include "storage/rollup.h"

namespace gpulse::query {

// Whether an aggregate folds into a cell.
bool IsCellAggregate(const AggSpec& spec);

// The type of a cell aggregate's answers: integer for count, float for mean,
// else the field's.
FieldType CellAnswerType(const AggSpec& spec);

class Cells {
 public:
  // Room for grid.count buckets of specs.size() aggregates (allocated on the
  // first fold, so a group that gets no point costs nothing).
  Cells() = default;

  // Folds points [begin, end) of `c` (one series, time order) into slot
  // `slot`, whose aggregate is `spec`. Points outside the grid are skipped.
  void AddRange(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                const Column& c, size_t begin, size_t end);

  // AddRange for points [begin, end) of a packed run (Db::ScanSeries's
  // packed windows): the same cells, without unpacking the run.
  void AddPacked(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                 const storage::PackedRun& run, size_t begin, size_t end);

  // Folds tier rows [begin, end) of `rows` (one series, bucket order) into
  // slot `slot`, as AggState::AddRollups: sums and counts add row by row,
  // extremes and first/last compare the rows' own points. Rows outside the
  // grid are skipped. `row_width`: the width of the rows' tier buckets (when
  // it is the grid's, a run of rows without gaps folds with no look at
  // their bucket times).
  void AddRollups(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                  const storage::RollupColumn& rows, size_t begin, size_t end, int64_t row_width);

  // Folds `other` (same specs and grid) into this; `other` is left empty.
  void Merge(const std::vector<AggSpec>& specs, const BucketGrid& grid, Cells* other);

  // Whether any aggregate of bucket i saw a point (the general path's "the
  // bucket has states").
  bool Present(size_t nslots, size_t i) const {
    if (cells_.empty()) return false;
    for (size_t k = 0; k < nslots; ++k) {
      if (cells_[i * nslots + k].n > 0) return true;
    }
    return false;
  }
  bool empty() const { return cells_.empty(); }

  // The answer of slot `slot` in bucket i (null when it saw no point, 0 for a
  // count in a present bucket), and the selected point's time (min, max,
  // first, last) in *selected, else INT64_MIN.
  QueryValue Result(const AggSpec& spec, size_t nslots, size_t slot, size_t i,
                    int64_t* selected) const;

  // Appends slot `slot`'s answers to *out as a typed column (Result's
  // values, the null ones left out) at the grid's bucket times, for the
  // buckets where any slot saw a point. out->type is set to the answers'
  // type: integer for count, float for mean, else the field's.
  void AppendResults(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                     Column* out) const;

  // What the cell record holds; `a`/`b` are min/max, or first/last, with
  // their points' times. A slot has one aggregate, so a sum's or a mean's
  // sums share their room (40 bytes a cell, not 56: a subquery over a
  // fleet's day at 15-minute grain writes and reads 61,440 of them).
  union Num {
    double d;
    int64_t i;
    uint64_t u;
  };
  struct Cell {
    uint64_t n;
    union {
      Num a;
      Num sum;  // typed: wraps like the integers
    };
    union {
      Num b;
      double dsum;  // for mean
    };
    int64_t ta, tb;
  };
  static_assert(sizeof(Cell) == 40);

 private:
  void Allocate(size_t nslots, const BucketGrid& grid);
  std::vector<Cell> cells_;  // bucket-major: cells_[i * nslots + slot]
};

}  // namespace gpulse::query
