// PromQL's aggregations (sum, avg, min, max, count, group, stddev, stdvar,
// topk, bottomk, quantile, count_values) with by/without, at every step of
// an evaluation, as Prometheus 2.42 computes them.
//
// Thread safety: pure functions.
#pragma once

#include "query/promeval/value.h"
#include "query/promql/ast.h"
#include "storage/status.h"

namespace gpulse::query::promeval {

// `e` is the aggregation; `param` its parameter's value (topk's k,
// quantile's q, count_values' label) or null.
Status Aggregate(const promql::Expr& e, const Value* param, std::vector<StepSeries> in,
                 size_t steps, std::vector<StepSeries>* out);

}  // namespace gpulse::query::promeval
