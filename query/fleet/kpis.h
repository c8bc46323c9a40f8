// SHOW KPIS [WHERE tags and time]: the fleet's supporting KPIs, each with its
// definition (queries anyone can run, with $range for the time range), its
// value over the range (default the last 24 hours), whether it leads or lags
// goodput, who owns it and how it should alert. docs/metric-framework.md
// gives the reasons.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Whether a KPI is called `name`.
bool IsKpi(std::string_view name);

// KPI `name`'s value over [start_ns, end_ns), as known at now_ns: null when
// there was nothing to compute it from.
Result<QueryValue> EvaluateKpi(Db* db, std::string_view name, int64_t start_ns, int64_t end_ns,
                               const QueryOptions& options, int64_t now_ns);

Status RunShowKpis(Db* db, const ShowStatement& statement, const QueryOptions& options,
                   int64_t now_ns, std::vector<ResultSeries>* out);

}  // namespace gpulse::query
