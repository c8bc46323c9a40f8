// The answer of an aggregate query, a group at a time: its buckets' values,
// FILL, the output expressions, ORDER BY and LIMIT, as rows, as
// ResultSeries::by_column, or as typed columns for an outer query.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/gpulse.h"
#include "query/exec/fold.h"
#include "query/plan/plan.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// One group's rows of an aggregate query: its buckets' answers, FILL, the
// output expressions, ORDER BY and LIMIT, into out->series (or, with
// as_columns, out->columns); out->rows stays 0 when the group has none. A
// group's rows depend on it alone, so costly ones (percentiles) are
// answered on the worker threads.
struct GroupAnswer {
  size_t rows = 0;
  ResultSeries series;
  ColumnSeries columns;
};

// How a statement's groups are answered: the same for every group, so
// worked out once (AnswerShapeOf).
struct AnswerShape {
  bool as_columns = false;         // typed columns, for an outer query
  bool by_column = false;          // in ResultSeries::by_column, for a caller that reads them so
  bool from_cells = false;         // straight from the cells
  std::vector<size_t> cell_slots;  // then, each output's slot
};

// The shape for answers as columns (an outer query's) or, with by_column,
// in ResultSeries::by_column; else in rows.
AnswerShape AnswerShapeOf(const SelectStatement& s, const Plan& plan, bool as_columns,
                          bool by_column);

// One group's rows (`all_buckets`: the buckets every group answers for).
Status AnswerGroup(const SelectStatement& s, const Plan& plan, const GroupKey& key, GroupAcc& acc,
                   const std::vector<int64_t>& all_buckets, const AnswerShape& shape,
                   GroupAnswer* out);

}  // namespace gpulse::query
