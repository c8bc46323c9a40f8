// DECOMPOSE NORTHSTAR BETWEEN a AND b VERSUS c AND d [BY dims]: why goodput
// moved between two windows. The GPU-minute ledger (fleet_ledger.h) of each
// window, each loss's share in both, the change in points, ranked, and the
// contributors each loss's change concentrates on. docs/metric-framework.md
// gives the rules.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

Status RunDecompose(Db* db, const DecomposeStatement& statement, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes);

}  // namespace gpulse::query
