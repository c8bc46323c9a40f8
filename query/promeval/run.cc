#include "query/promeval/run.h"

#include <algorithm>

#include "query/promeval/evaluator.h"
#include "query/promeval/select.h"
#include "query/promql/parser.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/runtime/query_memory.h"

namespace gpulse::query::promeval {

namespace {

Status Evaluate(Db* db, const promql::Expr& expr, const PromRequest& request,
                const QueryOptions& options, PromAnswer* answer) {
  const int64_t now_ns = options.now_ns != 0 ? options.now_ns : request.end * 1'000'000;
  ExecContext ctx(db, options, now_ns);
  std::unique_ptr<Input> input = DbSeriesInput(&ctx);
  SeriesSource source(&ctx, input.get());
  EvalSettings settings;
  settings.query_start = request.start;
  settings.query_end = request.end;
  settings.lookback = request.lookback;
  settings.use_tiers = request.use_tiers;
  Evaluator evaluator(&ctx, &source, settings);
  answer->range_query = !request.instant;
  const ValueType type = expr.type();
  if (request.instant && type == ValueType::kMatrix) {
    answer->type = ValueType::kMatrix;
    return evaluator.EvalRange(expr, request.start, &answer->raw);
  }
  answer->steps = Steps{request.start, request.instant ? request.start : request.end,
                        std::max<int64_t>(request.step, 1)};
  Value value;
  GPULSE_RETURN_IF_ERROR(evaluator.Eval(expr, answer->steps, &value));
  answer->type = request.instant ? value.type : ValueType::kMatrix;
  answer->text = std::move(value.text);
  for (StepSeries& s : value.series) {
    if (std::find(s.has.begin(), s.has.end(), 1) != s.has.end()) {
      answer->series.push_back(std::move(s));
    }
  }
  if (answer->range_query) {
    std::sort(answer->series.begin(), answer->series.end(),
              [](const StepSeries& a, const StepSeries& b) { return a.labels < b.labels; });
  }
  return Status::Ok();
}

}  // namespace

Status CheckReach(const QueryOptions& options) {
  if (options.database.empty() || !options.readable_databases) return Status::Ok();
  const auto& names = *options.readable_databases;
  if (std::find(names.begin(), names.end(), options.database) != names.end()) return Status::Ok();
  return Status::PermissionDenied("this token may not read database " + options.database);
}

Status RunPromQL(Db* db, const PromRequest& request, const QueryOptions& options,
                 PromAnswer* answer, PromFailure* failure, ParseError* error) {
  *failure = PromFailure::kParse;
  auto parsed = promql::ParsePromQL(request.text, error);
  if (!parsed.ok()) return parsed.status();
  const ValueType type = (*parsed)->type();
  if (!request.instant && (type == ValueType::kMatrix || type == ValueType::kString)) {
    return Status::InvalidArgument(std::string("invalid expression type \"") +
                                   promql::ValueTypeName(type) +
                                   "\" for range query, must be Scalar or instant Vector");
  }
  *failure = PromFailure::kEval;
  GPULSE_RETURN_IF_ERROR(CheckReach(options));
  Status s;
  if (options.memory == nullptr) {
    // An embedded caller's query still has the per-query bound.
    QueryMemory memory(options.limits.max_memory_bytes, nullptr);
    QueryOptions counted = options;
    counted.memory = &memory;
    s = Evaluate(db, **parsed, request, counted, answer);
  } else {
    s = Evaluate(db, **parsed, request, options, answer);
  }
  if (s.ok()) *failure = PromFailure::kNone;
  return s;
}

}  // namespace gpulse::query::promeval
