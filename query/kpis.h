// SHOW KPIS [WHERE tags and time]: the fleet's supporting KPIs, each with its
// definition (queries anyone can run, with $range for the time range), its
// value over the range (default the last 24 hours), whether it leads or lags
// goodput, who owns it and how it should alert. docs/metric-framework.md
// gives the reasons.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/ast.h"

namespace gpulse::query {

Status RunShowKpis(Db* db, const ShowStatement& statement, const QueryOptions& options,
                   int64_t now_ns, std::vector<ResultSeries>* out);

}  // namespace gpulse::query
