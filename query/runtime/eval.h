// Evaluating expressions: times in WHERE (now() - 1h, '2024-01-01'),
// row-level conditions and arithmetic, math functions, and the
// transformations that run along a series of rows (derivative,
// moving_average...).
//
// Thread safety: the functions are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Nanoseconds of a duration literal; InvalidArgument for calendar months.
Result<int64_t> DurationNanos(const Expr& e);

// The time an expression compared with `time` names: an RFC3339 or date
// string, an integer (nanoseconds), a duration literal (1704067200s), now(),
// and sums and differences of these.
Result<int64_t> EvalTime(const Expr& e, int64_t now_ns);

// Truth of a value in a condition: true only for boolean true.
inline bool IsTrue(const QueryValue& v) { return v.index() == 4 && std::get<bool>(v); }

// Whether the comparison op (=, !=, <, <=, >, >=) holds between two values
// that compare as c: -1, 0 or 1, or 2 when they do not order (NaN, a string
// and a number), where only != holds. Null for any other op. ApplyBinary's
// rule, for callers that compare typed values without a QueryValue.
inline std::optional<bool> ComparisonHolds(BinaryOp op, int c) {
  switch (op) {
    case BinaryOp::kEq:
      return c == 0;
    case BinaryOp::kNeq:
      return c != 0;
    case BinaryOp::kLt:
      return c != 2 && c < 0;
    case BinaryOp::kLte:
      return c != 2 && c <= 0;
    case BinaryOp::kGt:
      return c != 2 && c > 0;
    case BinaryOp::kGte:
      return c != 2 && c >= 0;
    default:
      return std::nullopt;
  }
}

// a <op> b for the comparison, logical and arithmetic operators (not =~ and
// !~: those need a compiled pattern); null when either side is null or the
// types do not go together (a string plus a number).
QueryValue ApplyBinary(BinaryOp op, const QueryValue& a, const QueryValue& b);

// Math functions (abs, round, pow...) on one row's arguments.
Result<QueryValue> ApplyMath(const std::string& name, const std::vector<QueryValue>& args);

// The numeric value of v as a double; false for null, strings and booleans.
bool ToDouble(const QueryValue& v, double* out);

// A transformation over one series of rows in time order: `times` and the
// argument's values (nulls are skipped over). `arg2` is the unit
// (derivative, rate, elapsed) or N (moving_average), 0 when absent. The
// output has one value per row; rows with no answer get null.
Result<std::vector<QueryValue>> ApplyTransformation(const std::string& name,
                                                    const std::vector<int64_t>& times,
                                                    const std::vector<QueryValue>& values,
                                                    int64_t arg2);

}  // namespace gpulse::query
