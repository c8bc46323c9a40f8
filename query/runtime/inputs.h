// Inputs of a SELECT: where its series come from, the Db or a subquery's
// answer, behind one interface the executor reads (query/exec/select.cc).
//
// A subquery's answer passes to the outer query as typed columns
// (ColumnSeries), which the outer query scans in place as it scans stored
// windows: a fleet's day at 15-minute grain is 60,000 rows, and as rows of
// QueryValues their building, reading back and freeing cost more than the
// fold.
//
// Thread safety: an Input's Read, Scan, ScanRollups and ScanTallies may be
// called from several threads at once; the listing methods from one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/context.h"
#include "query/runtime/result.h"
#include "storage/column.h"

namespace gpulse::query {

using storage::Column;

// A subquery's answer for one series.
struct ColumnSeries {
  std::string name;
  std::vector<Tag> tags;
  std::vector<std::string> columns;  // "time" first
  // Per column after time: its non-null values, typed, in time order (ts
  // holds their rows' times). The outer query reads them as stored points.
  std::vector<Column> values;
};

// One output column of answers (rows at `times`, nulls absent) as a typed
// column in time order. Its type: the values' own when they agree; float
// when numbers of several kinds mix (FILL(0) among means gives integer
// zeros between floats); a string or bool type over numbers (FILL(0) in a
// column of last(state)), the numbers then left out.
Column AnswerColumn(const std::vector<int64_t>& times, const std::vector<QueryValue>& values);

// True when the non-null values are all of one type: AnswerColumn then keeps
// every one of them as it is.
bool OfOneType(const std::vector<QueryValue>& values);

// An answer in rows as columns (rows whose time is not an integer are left
// out).
ColumnSeries ToColumns(ResultSeries&& rs);

// A series as an Input lists it.
struct InSeries {
  SeriesId id = kNoSeriesId;  // DbSeriesInput: its catalog id, what Read needs
  std::vector<Tag> tags;      // as the query sees them (no `db` under a database)
  size_t source = 0;          // AnswerInput: the position of the answer's series
};

// Where a SELECT's series come from.
class Input {
 public:
  virtual ~Input() = default;
  virtual Status Measurements(std::vector<std::string>* out) = 0;
  virtual Status ListSeries(const std::string& measurement, const std::vector<TagMatcher>& eq,
                            std::vector<InSeries>* out) = 0;
  // The tag keys of a measurement's series, as the query sees them.
  virtual Status TagKeys(const std::string& measurement, std::set<std::string>* out) = 0;
  virtual Status Fields(const std::string& measurement, std::vector<FieldInfo>* out) = 0;
  // Thread-safe.
  virtual Status Read(const InSeries& s, std::span<const std::string> fields, int64_t lo,
                      int64_t hi, std::vector<Column>* out) = 0;
  // Thread-safe. Read's points in runs, as Db::ScanSeries hands them over
  // (packed ones to `packed` when given and the input has such).
  virtual Status Scan(const InSeries& s, std::span<const std::string> fields, int64_t lo,
                      int64_t hi, const Db::PointRunVisitor& fn,
                      const Db::PackedRunVisitor* packed) {
    (void)packed;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(Read(s, fields, lo, hi, &cols));
    for (size_t f = 0; f < cols.size(); ++f) {
      if (!cols[f].ts.empty()) fn(f, cols[f], 0, cols[f].ts.size());
    }
    return Status::Ok();
  }
  // Thread-safe. Scan of several series at once, fn's first argument the
  // position in `series`, the series in that order (Db::ScanSeries of many:
  // the Db's input reads them with one store iterator).
  virtual Status Scan(std::span<const InSeries* const> series, std::span<const std::string> fields,
                      int64_t lo, int64_t hi, const Db::SeriesRunVisitor& fn,
                      const Db::SeriesPackedVisitor* packed) {
    for (size_t s = 0; s < series.size(); ++s) {
      const Db::PackedRunVisitor one_packed = [&](size_t f, const storage::PackedRun& run,
                                                  size_t begin,
                                                  size_t end) { (*packed)(s, f, run, begin, end); };
      GPULSE_RETURN_IF_ERROR(Scan(
          *series[s], fields, lo, hi,
          [&](size_t f, const Column& col, size_t begin, size_t end) { fn(s, f, col, begin, end); },
          packed != nullptr ? &one_packed : nullptr));
    }
    return Status::Ok();
  }
  // Thread-safe. The first and last timestamps of the points of `fields` of
  // `series` in [lo, hi) (*first > *last: none), widened into what *first
  // and *last hold (Db::TimeExtent: the Db's input reads chunk headers).
  virtual Status TimeExtent(std::span<const InSeries* const> series,
                            std::span<const std::string> fields, int64_t lo, int64_t hi,
                            int64_t* first, int64_t* last) {
    return Scan(
        series, fields, lo, hi,
        [&](size_t, size_t, const Column& col, size_t begin, size_t end) {
          *first = std::min(*first, col.ts[begin]);
          *last = std::max(*last, col.ts[end - 1]);
        },
        nullptr);
  }
  // The tiers ScanRollups can read, bit t for storage::kTiers[t] (the Db's
  // kept tiers; a subquery's answer has none).
  virtual uint32_t Tiers() const { return 0; }
  // Thread-safe. Db::ScanRollups.
  virtual Status ScanRollups(const InSeries& s, std::span<const std::string> fields, size_t tier,
                             int64_t lo, int64_t hi, uint32_t parts, const Db::RollupVisitor& fn) {
    (void)s, (void)fields, (void)tier, (void)lo, (void)hi, (void)parts, (void)fn;
    return Status::InvalidArgument("this input has no tiers");
  }
  // Thread-safe. ScanRollups of several series at once, fn's first
  // argument the position in `series` (Db::ScanRollups of many: the Db's
  // input reads them in one pass over its catalog and cache).
  virtual Status ScanRollups(std::span<const InSeries* const> series,
                             std::span<const std::string> fields, size_t tier, int64_t lo,
                             int64_t hi, uint32_t parts, const Db::SeriesRollupVisitor& fn) {
    for (size_t s = 0; s < series.size(); ++s) {
      GPULSE_RETURN_IF_ERROR(ScanRollups(*series[s], fields, tier, lo, hi, parts,
                                         [&](size_t f, const RollupColumn& rows, size_t begin,
                                             size_t end) { fn(s, f, rows, begin, end); }));
    }
    return Status::Ok();
  }
  // Thread-safe. Db::ScanTallies.
  virtual Status ScanTallies(const InSeries& s, std::span<const std::string> fields, size_t tier,
                             int64_t lo, int64_t hi, const Db::TallyVisitor& fn) {
    (void)s, (void)fields, (void)tier, (void)lo, (void)hi, (void)fn;
    return Status::InvalidArgument("this input has no tiers");
  }
};

// The series of the Db the query runs on (its database's, under one), in
// key order.
std::unique_ptr<Input> DbSeriesInput(ExecContext* ctx);

// A subquery's answer. A field's type is its columns' when they agree, float
// when they do not (numbers of several kinds), float for a field with no
// values at all.
std::unique_ptr<Input> AnswerInput(std::vector<ColumnSeries> series);

}  // namespace gpulse::query
