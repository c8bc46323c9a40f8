// PromQL inside gpulse's own query text, for `gpulse query`, `gpulse shell`,
// /query and gpulse::Query (docs/promql.md, "From the shell"):
//
//   promql: sum by (gpu) (rate(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE[5m]))
//   promql 6h 5m: avg(DCGM_FI_DEV_GPU_UTIL)
//
// The first is an instant query at the query's now; the second a range
// query over the last 6 hours at a 5-minute step. The answer comes as
// InfluxQL's do: a series per PromQL series, named by its metric, its
// labels as tags, columns time and value.
//
// Thread safety: pure functions over the Db's own.
#pragma once

#include <string_view>

#include "engine/gpulse.h"
#include "query/runtime/result.h"

namespace gpulse::query::promeval {

// Whether `text` starts with the promql prefix (case-insensitive, leading
// blanks aside).
bool IsPromQLStatement(std::string_view text);

// Runs it. InvalidArgument in out->status for a bad prefix or expression,
// with the position in the expression.
void RunPromQLStatement(Db* db, std::string_view text, const QueryOptions& options,
                        StatementResult* out);

}  // namespace gpulse::query::promeval
