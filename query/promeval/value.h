// What a PromQL expression evaluates to, as the evaluator holds it: series
// of labels and values at the steps of the evaluation (an instant query is
// a range of one step), and the raw samples a selector reads. Times are
// milliseconds since the Unix epoch, as in Prometheus.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "query/promql/value_type.h"

namespace gpulse::query::promeval {

using promql::ValueType;

inline constexpr std::string_view kMetricName = "__name__";

struct Label {
  std::string name;
  std::string value;
  friend bool operator==(const Label&, const Label&) = default;
  friend auto operator<=>(const Label& a, const Label& b) = default;
};

// Sorted by name, names unique, no empty value (an empty value is no label).
using Labels = std::vector<Label>;

// The value of `name` ("" when absent).
std::string_view LabelValue(const Labels& labels, std::string_view name);
// Sets `name` to `value`, or removes it when `value` is empty.
void SetLabel(Labels* labels, std::string_view name, std::string_view value);
void DropLabel(Labels* labels, std::string_view name);
// The labels named in `names` only, or every label but those.
Labels KeepLabels(const Labels& labels, const std::vector<std::string>& names);
Labels DropLabels(const Labels& labels, const std::vector<std::string>& names);
// A key equal for equal label sets (for hashing and grouping).
std::string LabelsKey(const Labels& labels);
// Label sets by pointer, hashed and compared in place: sets of series by
// their labels without a key string built for each.
struct LabelsPtrHash {
  size_t operator()(const Labels* labels) const;
};
struct LabelsPtrEqual {
  bool operator()(const Labels* a, const Labels* b) const { return *a == *b; }
};
// As Prometheus prints a label set: {a="b", c="d"}.
std::string LabelsText(const Labels& labels);

// Stored times are nanoseconds, PromQL's milliseconds.
inline constexpr int64_t kNanosPerMilli = 1'000'000;
// The millisecond holding `ns` (rounded toward minus infinity).
inline int64_t MillisOf(int64_t ns) {
  const int64_t ms = ns / kNanosPerMilli;
  return ns < 0 && ms * kNanosPerMilli != ns ? ms - 1 : ms;
}

// a - b, held at the ends of int64 (a duration may be up to its largest).
inline int64_t Minus(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b > 0 ? INT64_MIN : INT64_MAX;
}

// The times of an evaluation: start, start + step, ... up to end.
struct Steps {
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
  size_t count() const { return static_cast<size_t>((end - start) / step) + 1; }
  int64_t at(size_t i) const { return start + static_cast<int64_t>(i) * step; }
};

// A series of an evaluation: a value at some of the steps.
struct StepSeries {
  Labels labels;
  std::vector<double> values;  // one per step
  std::vector<uint8_t> has;    // 1 where the series has a value at the step
};

// A series' stored samples, in time order.
struct RawSeries {
  Labels labels;
  std::vector<int64_t> times;
  std::vector<double> values;
};

// The value of an expression at every step. A scalar is one series without
// labels that has a value at every step; a string is `text`.
struct Value {
  ValueType type = ValueType::kVector;
  std::vector<StepSeries> series;
  std::string text;
};

StepSeries EmptySeries(Labels labels, size_t steps);
Value ScalarValue(double v, size_t steps);

// Series with equal labels made one (Prometheus keys its answer by labels):
// InvalidArgument-free; false when two of them have a value at one step,
// which Prometheus refuses ("vector cannot contain metrics with the same
// labelset").
bool MergeEqualLabels(std::vector<StepSeries>* series);

// Whether `name` is a label name: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsLabelName(std::string_view name);

// Prometheus' stale marker: a NaN of these bits ends a series.
inline constexpr uint64_t kStaleMarkerBits = 0x7ff0000000000002;
double StaleMarker();
bool IsStale(double v);

// A float as Prometheus writes one in JSON: the shortest text that reads
// back to it, never in exponent form; NaN, +Inf, -Inf.
std::string FormatPromFloat(double v);

}  // namespace gpulse::query::promeval
