// What an aggregate call is, as the planner sees it: its kind, the type of
// the field it folds, and its arguments (a percentile, integral's unit,
// top's count). The states that fold points live in exec/aggregate.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/gpulse.h"

namespace gpulse::query {

enum class AggKind : unsigned char {
  kCount,
  kSum,
  kMean,
  kMedian,
  kMode,
  kSpread,
  kStddev,
  kPercentile,
  kFirst,
  kLast,
  kMin,
  kMax,
  kIntegral,
  kDistinct,
  kTop,
  kBottom,
  kCountDistinct,  // count(distinct(f)): how many distinct values
};

// The AggKind for a function name (p95 is kPercentile); false for a name
// that is not an aggregate or selector.
bool LookupAggregate(std::string_view name, AggKind* kind, double* percentile);

// Whether the function picks one stored point (its time can be reported).
bool IsSelector(AggKind kind);
// Whether the function answers several rows per bucket.
bool IsMultiRow(AggKind kind);
// Whether the function accepts fields of this type.
bool AcceptsType(AggKind kind, FieldType type);

struct AggSpec {
  AggKind kind = AggKind::kCount;
  FieldType type = FieldType::kFloat;  // of the field aggregated
  double percentile = 50;              // kPercentile
  int64_t unit_ns = 1'000'000'000;     // kIntegral
  int64_t n = 1;                       // kTop, kBottom
  bool need_time = false;              // remember the selected point's time
};

}  // namespace gpulse::query
