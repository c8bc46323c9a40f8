// PromQL's face for the server and for programs that embed gpulse: a query
// text evaluated at one instant or over a range of steps (docs/promql.md),
// with QueryOptions' bounds, database and token scope, as /api/v1/query and
// /api/v1/query_range ask it.
//
//   PromRequest request{.text = "sum by (gpu) (rate(x[5m]))", .start = t0, .end = t1,
//                       .step = 60'000, .instant = false};
//   PromAnswer answer;
//   Status s = RunPromQL(db, request, options, &answer);
//
// Thread safety: any thread may call it on one Db at once.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "query/promeval/value.h"
#include "query/runtime/result.h"
#include "query/syntax/parse_error.h"

namespace gpulse::query::promeval {

struct PromRequest {
  std::string_view text;
  int64_t start = 0;  // ms; an instant query's time
  int64_t end = 0;
  int64_t step = 0;
  bool instant = true;
  int64_t lookback = 5 * 60 * 1000;
  // Whether range functions may read the tiers (docs/promql.md, "Long
  // ranges and the tiers"); false reads raw samples only.
  bool use_tiers = true;
};

// What Prometheus' API answers with: an instant query gives a scalar, a
// string, a vector (`series`, their one step) or a matrix (`raw`: a range
// vector's samples); a range query gives a matrix of `series` at `steps`.
struct PromAnswer {
  ValueType type = ValueType::kVector;
  bool range_query = false;
  Steps steps;
  std::vector<StepSeries> series;  // series without any value left out
  std::vector<RawSeries> raw;
  std::string text;
};

// PermissionDenied when the query names a database its token may not read.
Status CheckReach(const QueryOptions& options);

// The phase a failure happened in, for the API's error codes.
enum class PromFailure { kNone, kParse, kEval };

// InvalidArgument for a text that does not parse or cannot be asked this way
// (a range vector over a range) (*failure kParse, *error
// where) or an expression that cannot be run (kEval: a range vector asked
// over a range, many-to-many matching...); a query bound's own Status when
// one stops it (kEval).
Status RunPromQL(Db* db, const PromRequest& request, const QueryOptions& options,
                 PromAnswer* answer, PromFailure* failure, ParseError* error = nullptr);

}  // namespace gpulse::query::promeval
