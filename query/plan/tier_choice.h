// Which tier answers a plan: the coarsest whose buckets tile the query's
// GROUP BY time buckets (or the one FROM names), its tallies for count() of
// a string field by its values, or raw points. docs/architecture.md, "Tier
// choice", gives the rules.
#pragma once

#include <cstdint>

#include "query/plan/plan.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"

namespace gpulse::query {

// Picks the coarsest tier whose buckets tile the query's (or the one FROM
// names); plan->tier stays -1 for raw. Notes (retention, approximate
// quantiles) go to ctx->notes. An error only for a forced tier that cannot
// answer.
Status ChooseTier(ExecContext* ctx, const Input& input, Plan* plan);

// The rollup parts (storage/rollup.h) the plan's slots need.
uint32_t RollupPartsFor(const Plan& plan);

}  // namespace gpulse::query
