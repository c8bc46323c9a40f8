// BASELINE(<aggregate>, <history>[, <k>]): is this normal? For each bucket
// of a SELECT ... GROUP BY time(...), the aggregate's value, the expected
// value (the median of the same bucket of the day on the days of the same
// kind, weekday or weekend, within the history before it), a band of k
// robust standard deviations (1.4826 x MAD) around it, and how far the value
// is from it in those deviations. docs/metric-framework.md.
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Weekdays and weekends have their own normal: whether the UTC day of `ns`
// is a Saturday or Sunday.
bool WeekendDay(int64_t ns);

// The robust centre and spread of a history: the median, the median
// absolute deviation, and the standard deviation they estimate (1.4826 x
// MAD), floored at a hundredth of the median (or of one) so that a history
// with no spread still has a band. `samples` must not be empty.
struct RobustSpread {
  double median = 0;
  double mad = 0;
  double sigma = 0;
};
RobustSpread Spread(std::vector<double> samples);

// Whether a field of the statement calls baseline().
bool HasBaseline(const SelectStatement& s);

Status RunBaseline(Db* db, const SelectStatement& s, const QueryOptions& options, int64_t now_ns,
                   std::vector<ResultSeries>* out, std::vector<std::string>* notes);

}  // namespace gpulse::query
