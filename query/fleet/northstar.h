// NORTHSTAR: goodput, the share of capacity GPU-minutes that did useful work,
// over a range, per group and bucket, from the GPU-minute ledger
// (fleet_ledger.h). docs/metric-framework.md defines it.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Runs one NORTHSTAR statement. `now_ns` anchors OVER (default 24h) when the
// WHERE gives no time range.
Status RunNorthstar(Db* db, const NorthstarStatement& statement, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes);

}  // namespace gpulse::query
