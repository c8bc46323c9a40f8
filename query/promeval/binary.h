// PromQL's binary operators at every step of an evaluation: arithmetic,
// comparisons (filters, or 0/1 with `bool`), and, or, unless; between
// scalars, a vector and a scalar, or two vectors paired by their labels
// (on, ignoring, group_left, group_right), as Prometheus 2.42 defines them.
//
// Thread safety: pure functions.
#pragma once

#include "query/promeval/value.h"
#include "query/promql/ast.h"
#include "storage/status.h"

namespace gpulse::query::promeval {

// `e` is the operation, lhs and rhs its operands' values. InvalidArgument for
// what Prometheus refuses while it runs (many-to-many matching, duplicate
// results).
Status Binary(const promql::Expr& e, Value lhs, Value rhs, size_t steps, Value* out);

}  // namespace gpulse::query::promeval
