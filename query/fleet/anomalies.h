// ANOMALIES [BY tags] [WHERE tags and time] [OVER span]: flag the odd days.
// Each (group, UTC day) of the range is a point of four features, the daily
// mean and 95th percentile of GPU `util` (gpu) and of host `cpu_util`
// (node), scored by an isolation forest fitted on all the range's group-days
// (query/fleet/isolation_forest.h): a day unlike the others, in any combination of
// the features, scores near 1. It is a statement rather than a SELECT
// function because its features come from two measurements.
// docs/metric-framework.md gives the reasons.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// A day scoring at least this is flagged anomalous.
inline constexpr double kAnomalyThreshold = 0.6;

Status RunAnomalies(Db* db, const AnomaliesStatement& statement, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes);

}  // namespace gpulse::query
