// The PromQL evaluator: a checked tree (query/promql/parser.h) evaluated at
// every step of a range at once, node by node, as Prometheus 2.42's engine
// does: selectors read their series once for the whole range, and each
// operator and function works on series of step values. A range vector
// (x[5m], or a subquery) is only ever a function's argument: the function
// slides its window over the samples, step by step.
//
// Thread safety: one evaluator per query, on one thread.
#pragma once

#include <cstdint>

#include "query/promeval/select.h"
#include "query/promeval/value.h"
#include "query/promql/ast.h"
#include "query/runtime/context.h"

namespace gpulse::query::promeval {

struct EvalSettings {
  int64_t query_start = 0;  // what @ start() and @ end() name (ms)
  int64_t query_end = 0;
  int64_t lookback = 5 * 60 * 1000;   // how far back an instant selector looks
  int64_t subquery_step = 60 * 1000;  // a subquery's step when it names none
  // sum, count, avg, min, max, last and present _over_time of a selector
  // from the tiers' rows where they answer (window_fold.h).
  bool use_tiers = true;
};

class Evaluator {
 public:
  Evaluator(ExecContext* ctx, SeriesSource* source, const EvalSettings& settings)
      : ctx_(ctx), source_(source), settings_(settings) {}

  // The value of `e` at every step. InvalidArgument for what Prometheus
  // refuses while it runs; a bound of the query (memory, points, time)
  // stops it with that bound's error.
  Status Eval(const promql::Expr& e, const Steps& steps, Value* out);

  // A range vector at one time (an instant query of `x[5m]`): the raw
  // samples of each series in its window.
  Status EvalRange(const promql::Expr& e, int64_t time, std::vector<RawSeries>* out);

 private:
  int64_t EvalTime(const promql::Expr& modifiers, int64_t step_time) const;
  Status EvalSelector(const promql::Expr& e, const Steps& steps, bool sample_times, Value* out);
  // The samples a range-vector argument slides over, its range, and the
  // node whose @ and offset place its windows.
  Status RangeSamples(const promql::Expr& e, const Steps& steps, std::vector<RawSeries>* series,
                      const promql::Expr** modifiers);
  Status EvalCall(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalRangeCall(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalAbsentOverTime(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalVectorCall(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalHistogramQuantile(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalLabelCall(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalAggregate(const promql::Expr& e, const Steps& steps, Value* out);
  Status EvalBinary(const promql::Expr& e, const Steps& steps, Value* out);
  Status Charge(const std::vector<StepSeries>& series, size_t steps);

  ExecContext* ctx_;
  SeriesSource* source_;
  EvalSettings settings_;
};

// The labels absent() and absent_over_time() answer with: the equality
// matchers of a selector argument.
Labels AbsentLabels(const promql::Expr& arg);

}  // namespace gpulse::query::promeval
