#include "query/plan/agg_spec.h"

namespace gpulse::query {

namespace {

struct NameKind {
  std::string_view name;
  AggKind kind;
  double percentile;
};

constexpr NameKind kAggregates[] = {
    {"count", AggKind::kCount, 0},       {"sum", AggKind::kSum, 0},
    {"mean", AggKind::kMean, 0},         {"median", AggKind::kMedian, 0},
    {"mode", AggKind::kMode, 0},         {"spread", AggKind::kSpread, 0},
    {"stddev", AggKind::kStddev, 0},     {"percentile", AggKind::kPercentile, 0},
    {"p50", AggKind::kPercentile, 50},   {"p90", AggKind::kPercentile, 90},
    {"p95", AggKind::kPercentile, 95},   {"p99", AggKind::kPercentile, 99},
    {"first", AggKind::kFirst, 0},       {"last", AggKind::kLast, 0},
    {"min", AggKind::kMin, 0},           {"max", AggKind::kMax, 0},
    {"integral", AggKind::kIntegral, 0}, {"distinct", AggKind::kDistinct, 0},
    {"top", AggKind::kTop, 0},           {"bottom", AggKind::kBottom, 0},
};

}  // namespace

bool LookupAggregate(std::string_view name, AggKind* kind, double* percentile) {
  for (const NameKind& a : kAggregates) {
    if (a.name == name) {
      *kind = a.kind;
      *percentile = a.percentile;
      return true;
    }
  }
  return false;
}

bool IsSelector(AggKind kind) {
  return kind == AggKind::kFirst || kind == AggKind::kLast || kind == AggKind::kMin ||
         kind == AggKind::kMax || kind == AggKind::kPercentile || kind == AggKind::kTop ||
         kind == AggKind::kBottom;
}

bool IsMultiRow(AggKind kind) {
  return kind == AggKind::kDistinct || kind == AggKind::kTop || kind == AggKind::kBottom;
}

bool AcceptsType(AggKind kind, FieldType type) {
  if (type == FieldType::kFloat || type == FieldType::kInt || type == FieldType::kUint) {
    return true;
  }
  switch (kind) {
    case AggKind::kCount:
    case AggKind::kFirst:
    case AggKind::kLast:
    case AggKind::kDistinct:
    case AggKind::kCountDistinct:
    case AggKind::kMode:
      return true;
    case AggKind::kMin:
    case AggKind::kMax:
      return type == FieldType::kBool;
    default:
      return false;
  }
}

}  // namespace gpulse::query
