// The executor: runs parsed statements against a Db and fills a QueryResult.
//
// A SELECT is planned (query/select_plan.h: which series, fields, time range,
// buckets and output columns) and then run by reading each chosen series'
// fields over the time range once (Db::ReadSeries), on worker threads, and
// folding the points into per-group, per-bucket aggregate states
// (query/exec/aggregate.h) or, without aggregates, into rows. SHOW statements read
// the catalog. EXPLAIN runs the plan and reports what it touched.
//
// Thread safety: Execute may be called from any number of threads at once.
#pragma once

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/parser.h"

namespace gpulse::query {

// Runs every statement; each gets its own StatementResult (an error in one
// does not stop the next). With keep_plans, a SELECT's plans are kept in the
// executor's plan cache for the tree's next run (query/plan/plan_cache.h); a
// caller that runs a tree once (gpulse::Query) saves the copy by turning it
// off.
void Execute(Db* db, const StatementList& statements, const QueryOptions& options, QueryResult* out,
             bool keep_plans = true);

// Whether options.readable_databases lets a statement read `database` ("" is
// every database at once: only an unscoped caller may).
bool MayRead(const QueryOptions& options, std::string_view database);
// The readable databases for an error message: "dbA, dbB", "every database".
std::string ReadableList(const QueryOptions& options);

}  // namespace gpulse::query
