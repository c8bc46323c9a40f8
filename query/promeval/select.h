// Stored series as PromQL names them (docs/promql.md, "Names"): a field f of
// a measurement written as Prometheus data (engine/gpulse.h,
// kPrometheusMeasurementKind) is the metric f; a numeric field f of any
// other measurement m is the metric m_f. A series' tags are its labels; its
// string fields (pod, namespace, job... as the Prometheus mapping keeps
// them) are labels of the samples they accompany, at their time, so one
// stored series is as many PromQL series as it had label values.
//
// Thread safety: one thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "query/promeval/value.h"
#include "query/promeval/window_fold.h"
#include "query/promql/ast.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/syntax/regex.h"

namespace gpulse::query::promeval {

// A label matcher ready to test values: a regex is anchored as PromQL's are.
class Matcher {
 public:
  static Result<Matcher> Compile(const promql::LabelMatcher& m);
  const std::string& name() const { return name_; }
  bool Matches(std::string_view value) const;
  // An equality with a value: what the catalog can look up directly.
  bool IsEquality() const { return op_ == promql::MatchOp::kEqual && !value_.empty(); }
  const std::string& value() const { return value_; }

 private:
  std::string name_;
  promql::MatchOp op_ = promql::MatchOp::kEqual;
  std::string value_;
  Regex re_;
};

// A stored field as a metric.
struct StoredMetric {
  std::string name;  // the metric name
  std::string measurement;
  std::string field;
  std::vector<std::string> label_fields;  // the measurement's string fields
  // The field of the metric's stale markers (StaleFieldOf(field)), or ""
  // when the measurement has none.
  std::string stale_field;
};

class SeriesSource {
 public:
  SeriesSource(ExecContext* ctx, Input* input) : ctx_(ctx), input_(input) {}

  // The samples in [lo, hi] (ms) of every series the matchers select, one
  // RawSeries per label set, with __name__.
  Status Select(const std::vector<promql::LabelMatcher>& matchers, int64_t lo, int64_t hi,
                std::vector<RawSeries>* out);

  // The stored metrics whose names the matchers on __name__ accept.
  Status Metrics(const std::vector<Matcher>& matchers, std::vector<StoredMetric>* out);

  // The label sets of the series the matchers select that have samples in
  // [lo, hi] (ms): Select without the samples (a series without string
  // fields is not read, only its extent).
  Status LabelSets(const std::vector<promql::LabelMatcher>& matchers, int64_t lo, int64_t hi,
                   std::vector<Labels>* out);

  // A range function folded where its samples are read (window_fold.h),
  // at windows [end - range, end] (ms) for each of `ends`: each selected
  // series of a metric without label fields comes back folded (a value
  // where its window has samples), with its labels and __name__, from the
  // tiers' rows where they answer exactly, else from its raw samples; the
  // series of metrics with label fields come back in *raw with their
  // samples in [min(ends) - range, max(ends)], as Select gives them.
  Status FoldWindows(const std::vector<promql::LabelMatcher>& matchers,
                     std::span<const int64_t> ends, int64_t range, WindowFold fold,
                     std::vector<StepSeries>* folded, std::vector<RawSeries>* raw);

  // The values string field `field` of `measurement` had in [lo, hi]: from
  // the tallies of the coarsest kept tier (whole buckets), or from the
  // samples when no tier is kept.
  Status LabelFieldValues(const std::string& measurement, const std::string& field, int64_t lo,
                          int64_t hi, std::set<std::string>* out);

 private:
  Status Load();
  Status AddMetric(const std::string& measurement, const std::string& field,
                   std::vector<StoredMetric>* out);
  // labels_only: RawSeries without samples, one for each label set seen.
  Status Select(const std::vector<promql::LabelMatcher>& matchers, int64_t lo, int64_t hi,
                bool labels_only, std::vector<RawSeries>* out);
  Status SelectMetrics(const std::vector<StoredMetric>& metrics,
                       const std::vector<Matcher>& matchers, int64_t lo, int64_t hi,
                       bool labels_only, std::vector<RawSeries>* out);
  // fn for each measurement's metrics in turn (Metrics() lists them
  // together).
  Status ForEachMeasurement(std::span<const StoredMetric> metrics,
                            const std::function<Status(std::span<const StoredMetric> group)>& fn);
  // The series of a measurement the matchers select (`listed` owns them).
  struct Selection {
    std::vector<InSeries> listed;
    std::vector<const InSeries*> series;
    std::vector<const Matcher*> on_label_fields;  // matchers of label fields
  };
  Status ListSelected(const StoredMetric& metric, const std::vector<Matcher>& matchers,
                      Selection* out);
  // Series are read in blocks of kBlock, each block by one store iterator
  // (Db::ScanSeries of many) on one of the query threads: fn(b, begin,
  // block) for block b, series [begin, begin + block.size()).
  static constexpr size_t kBlock = 64;
  Status ForEachBlock(std::span<const InSeries* const> series,
                      const std::function<Status(size_t b, size_t begin,
                                                 std::span<const InSeries* const> block)>& fn);
  // The points of `fields` of `series` in [lo, hi) (ns): (*cols)[i][f].
  Status ReadColumns(std::span<const InSeries* const> series, std::span<const std::string> fields,
                     int64_t lo, int64_t hi, std::vector<std::vector<Column>>* cols);
  // Metrics of one measurement, read together on the query threads.
  Status SelectMeasurement(std::span<const StoredMetric> metrics,
                           const std::vector<Matcher>& matchers, int64_t lo, int64_t hi,
                           bool labels_only, std::vector<RawSeries>* out);
  // The samples of `selected` (of the metrics' measurement) in [lo, hi].
  Status ReadSelected(std::span<const StoredMetric> metrics,
                      std::span<const InSeries* const> selected,
                      const std::vector<const Matcher*>& on_label_fields, int64_t lo, int64_t hi,
                      bool labels_only, std::vector<RawSeries>* out);
  // FoldWindows over the metrics of one measurement without label fields:
  // from the first of `tiers` whose rows answer its first series' windows,
  // and from the raw samples where the rows do not answer.
  Status FoldMeasurement(std::span<const StoredMetric> metrics,
                         const std::vector<Matcher>& matchers, std::span<const int64_t> ends,
                         int64_t range, WindowFold fold, std::span<const size_t> tiers,
                         std::vector<StepSeries>* folded);
  // The windows of `block`'s metrics from tier `tier`: (*found)[i * metrics
  // + j] series i's metric j folded (no value: no sample in any window), or
  // (*raw_needed)[i * metrics + j] set when the rows cannot answer it.
  Status FoldSeries(std::span<const StoredMetric> metrics, std::span<const InSeries* const> block,
                    std::span<const int64_t> ends, int64_t range, WindowFold fold, size_t tier,
                    std::vector<StepSeries>* found, std::vector<uint8_t>* raw_needed);
  // The same from the raw samples, for the entries raw_needed marks (all
  // when it is empty).
  Status FoldRawSeries(std::span<const StoredMetric> metrics,
                       std::span<const InSeries* const> block,
                       const std::vector<uint8_t>& raw_needed, std::span<const int64_t> ends,
                       int64_t range, WindowFold fold, std::vector<StepSeries>* found);
  Status Compile(const std::vector<promql::LabelMatcher>& matchers, std::vector<Matcher>* out);
  bool Readable(const std::vector<Tag>& tags) const;

  ExecContext* ctx_;
  Input* input_;
  bool loaded_ = false;
  std::vector<std::string> measurements_;
  std::set<std::string> prometheus_;  // measurements written as Prometheus data
  std::map<std::string, std::vector<FieldInfo>> fields_;
};

}  // namespace gpulse::query::promeval
