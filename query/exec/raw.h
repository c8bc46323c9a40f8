// A raw SELECT (no aggregate) over one measurement: its series' points read
// and joined on time, each group's rows in time order. Answered whole, or,
// for a streamed answer, a span of the range at a time.
#pragma once

#include <vector>

#include "engine/gpulse.h"
#include "query/plan/plan.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Answers a raw SELECT whole. With LIMIT (and no SLIMIT or SOFFSET) it
// answers the first OFFSET + LIMIT rows of each group: it reads a window at the start of the
// range (at its end under ORDER BY time DESC), a minute a row wide at first
// and four times wider each time, until every group its series can form has
// its LIMIT rows there or the window is the whole range. The rows of a group
// that has them in the window are the range's first ones, so the answer is
// the whole range's. `SELECT * FROM gpu LIMIT 3` reads minutes, not the
// store (it was refused for its memory or its rows).
Status RunRaw(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
              const std::vector<InSeries>& series, std::vector<ResultSeries>* out);

// A raw SELECT whose answer goes to ctx->emit: read a span of the range at a
// time (later ones first under ORDER BY time DESC), its rows sent in slices
// and let go before the next span is read, so that the query holds one
// span's points however long its range.
Status StreamRaw(ExecContext* ctx, const SelectStatement& s, Input* input, const Plan& plan,
                 const std::vector<InSeries>& series);

}  // namespace gpulse::query
