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

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "query/promeval/value.h"
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
  // Metrics of one measurement, read together on the query threads.
  Status SelectMeasurement(std::span<const StoredMetric> metrics,
                           const std::vector<Matcher>& matchers, int64_t lo, int64_t hi,
                           bool labels_only, std::vector<RawSeries>* out);
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
