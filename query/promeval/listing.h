// What Prometheus' listing endpoints answer, over what gpulse stores
// (docs/promql.md, "Names"): the label sets of the series selectors select
// (/api/v1/series), label names (/api/v1/labels) and a label's values
// (/api/v1/label/<name>/values), with match[] selectors, a time range and a
// limit, under the query's database and token scope; and remote read's raw
// samples of the series its matchers select.
//
// With match[], the series are those with samples in the range, and their
// string fields (pod, namespace...) give as many label sets as they had
// values. Without match[], names and tag values come from the catalog, for
// the range as a whole (a series listed may have no sample in it), and a
// string field's values from the coarsest kept tier's tallies (the head's
// included) or, without tiers, from its samples.
//
// Thread safety: any thread may call them on one Db at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/promeval/run.h"
#include "query/promeval/value.h"
#include "query/promql/ast.h"
#include "query/runtime/result.h"

namespace gpulse::query::promeval {

struct ListingRequest {
  std::vector<std::string> matches;  // match[] selectors
  int64_t start = INT64_MIN;         // ms, both included
  int64_t end = INT64_MAX;
  size_t limit = 0;  // 0: no limit
};

// *failure is kParse for a match[] that does not parse (InvalidArgument).
Status ListLabelSets(Db* db, const ListingRequest& request, const QueryOptions& options,
                     std::vector<Labels>* out, PromFailure* failure);
// Sorted, distinct.
Status ListLabelNames(Db* db, const ListingRequest& request, const QueryOptions& options,
                      std::vector<std::string>* out, PromFailure* failure);
Status ListLabelValues(Db* db, const ListingRequest& request, const std::string& name,
                       const QueryOptions& options, std::vector<std::string>* out,
                       PromFailure* failure);

// Remote read's samples: those in [start, end] (ms) of every series the
// matchers select, sorted by labels, stale markers included, under the
// query bounds of `options`. InvalidArgument when a regex does not compile
// or no matcher selects anything by itself (all match the empty value: the
// whole store), as PromQL refuses such a selector.
Status ReadSamples(Db* db, const std::vector<promql::LabelMatcher>& matchers, int64_t start,
                   int64_t end, const QueryOptions& options, std::vector<RawSeries>* out);

}  // namespace gpulse::query::promeval
