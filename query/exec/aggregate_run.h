// An aggregate SELECT over one measurement, run: its series folded into
// their groups' states on the query threads (from tier rollups or tallies
// where the plan's tier answers, else from raw points), the workers' groups
// merged, and each group answered.
#pragma once

#include <vector>

#include "engine/gpulse.h"
#include "query/plan/plan.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Runs the aggregate plan over `series` (the plan's tier is chosen here).
// The answer goes to `out`, or as columns to `columns` when it is not null
// (a subquery's answer).
Status RunAggregate(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
                    const std::vector<InSeries>& series, std::vector<ResultSeries>* out,
                    std::vector<ColumnSeries>* columns);

}  // namespace gpulse::query
