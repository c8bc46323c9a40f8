// ROLLOUTS: the drivers and images the fleet began running within a window
// (a node's driver_version, a job's image), each with a sequential test of
// its jobs' software failures against the rest of the fleet's rate in the
// same window. A rule ON ROLLOUTS pages on a bad deploy from its first
// failures, before goodput sags (docs/metric-framework.md, "Rollouts").
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// How strong a rollout's evidence must be to be called failing beyond
// chance: log10 of the likelihood ratio (1 in 1,000).
inline constexpr double kRolloutEvidenceCalled = 3;

// The evidence that a cohort fails more often than `expected` failures
// say, having failed `failures` times: log10 of the average, over the
// multipliers 2, 4, ..., 1024, of Wald's likelihood ratio of the cohort
// failing that many times as often (a Poisson count). 0 or less: none.
double RolloutEvidence(double failures, double expected);

// Runs one ROLLOUTS statement. `now_ns` anchors OVER (default 6h) when the
// WHERE gives no time range.
Status RunRollouts(Db* db, const RolloutsStatement& statement, const QueryOptions& options,
                   int64_t now_ns, std::vector<ResultSeries>* out, std::vector<std::string>* notes);

}  // namespace gpulse::query
