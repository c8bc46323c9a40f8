// SHOW STALE [bound]: the collection contract's breaches at now(): sources
// silent past the bound (fleet nodes and single GPUs from their points; with
// a server, also scrape targets and pushing hosts), clusters with no node
// reporting, nodes reporting fewer GPUs than their inventory, and GPUs
// allocated to a job that report no use (docs/metric-framework.md).
#pragma once

#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

Status RunShowStale(Db* db, const ShowStatement& statement, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out);

}  // namespace gpulse::query
