// Expressions evaluated over rows and columns: a WHERE condition on one
// joined row of a series (EvalRow), or on a series' tags alone (TagTruth);
// an output expression over the rows of an answer (EvalColumn); ORDER BY and
// LIMIT on a series' rows.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/gpulse.h"
#include "query/plan/plan.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// One joined row of a series (fold.h's Join).
struct RowRef {
  const InSeries* series;
  const std::vector<Column>* cols;
  const std::vector<std::vector<int32_t>>* pos;  // per field, per row
  size_t row;
};

// The value of `e` at row r: fields from the row, tags from the series.
QueryValue EvalRow(const Expr& e, const Plan& plan, const RowRef& r, int64_t now_ns);

// Whether the condition holds for every row of a series (true), none
// (false), or depends on field values (nullopt): tags are known per series.
std::optional<bool> TagTruth(const Expr& e, const Plan& plan, const InSeries& s);

// Evaluates an output expression over the rows of one output series, its
// leaves (fields, tags, aggregate calls) given by `leaf`.
using LeafFn = std::function<Result<std::vector<QueryValue>>(const Expr&)>;
Result<std::vector<QueryValue>> EvalColumn(const Expr& e, const std::vector<int64_t>& times,
                                           const LeafFn& leaf);

// ORDER BY, OFFSET and LIMIT on one series' rows.
void OrderAndLimit(const SelectStatement& s, ResultSeries* rs);

}  // namespace gpulse::query
