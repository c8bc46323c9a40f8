// SELECT: one statement over the measurements and subqueries it names, each
// measurement planned (plan/), its series listed, and the plan run
// (aggregate_run.h, raw.h). Internal to query/; the entry point is Execute
// (query/executor.h).
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/context.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Runs `s` and appends its series (sorted by measurement, then tags).
Status RunSelect(ExecContext* ctx, const SelectStatement& s, std::vector<ResultSeries>* out,
                 std::vector<std::string>* notes);

// A SELECT that another statement runs inside itself (BASELINE's history,
// a KPI, ANOMALIES' features), with that statement's options and clock: its
// answer in rows into *out, its notes (and any damage read) appended to
// *notes.
Status RunInnerSelect(Db* db, const QueryOptions& options, int64_t now_ns, const SelectStatement& s,
                      std::vector<ResultSeries>* out, std::vector<std::string>* notes);

}  // namespace gpulse::query
