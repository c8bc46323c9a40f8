// BASELINE(<aggregate>, <history>[, <k>]): is this normal? For each bucket
// of a SELECT ... GROUP BY time(...), the aggregate's value, the expected
// value (the median of the same bucket of the day on the days of the same
// kind, weekday or weekend, within the history before it), a band of k
// robust standard deviations (1.4826 x MAD) around it, and how far the value
// is from it in those deviations. docs/metric-framework.md.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/ast.h"

namespace gpulse::query {

// Whether a field of the statement calls baseline().
bool HasBaseline(const SelectStatement& s);

Status RunBaseline(Db* db, const SelectStatement& s, const QueryOptions& options, int64_t now_ns,
                   std::vector<ResultSeries>* out, std::vector<std::string>* notes);

}  // namespace gpulse::query
