// The query language's public face, for programs that embed gpulse: run
// InfluxQL and gpulse's fleet statements (docs/query-language.md) against a
// Db, and read the answer. A program that only stores and reads points
// needs engine/gpulse.h alone and links gpulse_engine; one that asks
// questions includes this and links gpulse_query.
//
//   gpulse::QueryResult result;
//   gpulse::Status s = gpulse::Query(db, "SELECT mean(util) FROM gpu GROUP BY time(1h)", {},
//                                    &result);
//
// Thread safety: any thread may call Query on one Db at once; each call has
// its own QueryResult.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/gpulse.h"
#include "query/runtime/result.h"

namespace gpulse {

// Runs one or more statements (SELECT, SHOW, EXPLAIN, NORTHSTAR...). The
// Status is not OK only when the text does not parse (InvalidArgument with
// line, column and what was expected); each statement's own error is in its
// result.
Status Query(Db* db, std::string_view text, const QueryOptions& options, QueryResult* out);

// What the query layer keeps between queries, process-wide (the server's
// /metrics reports it).
struct QueryCacheStats {
  size_t kept_plan_series = 0;       // series in the lists of kept plans (at most 65,536)
  uint64_t ledger_kept_bytes = 0;    // kept spans of the GPU-minute ledger
  uint64_t ledger_spans_reused = 0;  // spans NORTHSTAR read from kept ones, so far
  uint64_t ledger_spans_built = 0;   // ... and built and kept
};
QueryCacheStats GetQueryCacheStats();

}  // namespace gpulse
