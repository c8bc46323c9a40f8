#include "query/runtime/eval.h"

#include <cmath>
#include <limits>

#include "query/runtime/result.h"
#include "query/syntax/lexer.h"
#include "query/syntax/time_literal.h"

namespace gpulse::query {

namespace {

bool IsNumeric(const QueryValue& v) { return v.index() == 1 || v.index() == 2 || v.index() == 3; }

// -1, 0, 1; or 2 when the values do not compare.
int Compare(const QueryValue& a, const QueryValue& b) {
  if (a.index() == 2 && b.index() == 2) {
    const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.index() == 3 && b.index() == 3) {
    const uint64_t x = std::get<uint64_t>(a), y = std::get<uint64_t>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (IsNumeric(a) && IsNumeric(b)) {
    double x = 0, y = 0;
    ToDouble(a, &x);
    ToDouble(b, &y);
    if (std::isnan(x) || std::isnan(y)) return 2;
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.index() == 5 && b.index() == 5) {
    const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.index() == 4 && b.index() == 4) {
    return static_cast<int>(std::get<bool>(a)) - static_cast<int>(std::get<bool>(b));
  }
  return 2;
}

QueryValue Arithmetic(BinaryOp op, const QueryValue& a, const QueryValue& b) {
  if (!IsNumeric(a) || !IsNumeric(b)) return std::monostate{};
  // Integers stay integers for + - * %, wrapping as int64 does; division is
  // always floating point, as in InfluxQL.
  if (a.index() == 2 && b.index() == 2 && op != BinaryOp::kDiv) {
    const auto x = static_cast<uint64_t>(std::get<int64_t>(a));
    const auto y = static_cast<uint64_t>(std::get<int64_t>(b));
    switch (op) {
      case BinaryOp::kAdd:
        return static_cast<int64_t>(x + y);
      case BinaryOp::kSub:
        return static_cast<int64_t>(x - y);
      case BinaryOp::kMul:
        return static_cast<int64_t>(x * y);
      case BinaryOp::kMod: {
        const int64_t d = std::get<int64_t>(b);
        if (d == 0 || (d == -1 && std::get<int64_t>(a) == INT64_MIN)) return std::monostate{};
        return std::get<int64_t>(a) % d;
      }
      default:
        break;
    }
  }
  double x = 0, y = 0;
  ToDouble(a, &x);
  ToDouble(b, &y);
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      if (y == 0) return std::monostate{};
      return x / y;
    case BinaryOp::kMod:
      if (y == 0) return std::monostate{};
      return std::fmod(x, y);
    default:
      break;
  }
  return std::monostate{};
}

}  // namespace

bool ToDouble(const QueryValue& v, double* out) {
  switch (v.index()) {
    case 1:
      *out = std::get<double>(v);
      return true;
    case 2:
      *out = static_cast<double>(std::get<int64_t>(v));
      return true;
    case 3:
      *out = static_cast<double>(std::get<uint64_t>(v));
      return true;
    default:
      return false;
  }
}

Result<int64_t> DurationNanos(const Expr& e) {
  int64_t total = 0;
  for (const DurationPart& p : e.duration) {
    const int64_t ns = DurationPartNanos(p);
    if (ns < 0) {
      return Status::InvalidArgument(
          p.unit == "mo" ? "a month has no fixed length; use it only in time() of GROUP BY"
                         : "duration " + DurationToString(e.duration) + " is too long");
    }
    if (total > std::numeric_limits<int64_t>::max() - ns) {
      return Status::InvalidArgument("duration " + DurationToString(e.duration) + " is too long");
    }
    total += ns;
  }
  return total;
}

Result<int64_t> EvalTime(const Expr& e, int64_t now_ns) {
  auto where = [&](const std::string& what) {
    return Status::InvalidArgument("line " + std::to_string(e.pos.line) + ", column " +
                                   std::to_string(e.pos.column) + ": " + what);
  };
  switch (e.kind) {
    case ExprKind::kString: {
      int64_t ns = 0;
      if (!ParseTimeLiteral(e.text, &ns)) return where("'" + e.text + "' is not a time");
      return ns;
    }
    case ExprKind::kInteger:
      return e.int_value;
    case ExprKind::kFloat:
      // A double outside int64 does not convert (undefined behaviour).
      if (!(e.float_value >= -9.2e18 && e.float_value <= 9.2e18)) return where("time out of range");
      return static_cast<int64_t>(e.float_value);
    case ExprKind::kDuration:
      return DurationNanos(e);
    case ExprKind::kCall:
      if (e.text == "now") return now_ns;
      return where(e.text + "() cannot be compared with time");
    case ExprKind::kUnary: {
      if (e.unary_op != UnaryOp::kNeg) return where("NOT cannot be compared with time");
      Result<int64_t> v = EvalTime(*e.children[0], now_ns);
      if (!v.ok()) return v;
      return -*v;
    }
    case ExprKind::kBinary: {
      if (e.binary_op != BinaryOp::kAdd && e.binary_op != BinaryOp::kSub) {
        return where("only + and - combine times and durations");
      }
      Result<int64_t> a = EvalTime(*e.children[0], now_ns);
      if (!a.ok()) return a;
      Result<int64_t> b = EvalTime(*e.children[1], now_ns);
      if (!b.ok()) return b;
      int64_t r = 0;
      const bool overflow = e.binary_op == BinaryOp::kAdd ? __builtin_add_overflow(*a, *b, &r)
                                                          : __builtin_sub_overflow(*a, *b, &r);
      if (overflow) return where("time out of range");
      return r;
    }
    default:
      return where(e.ToString() + " is not a time");
  }
}

QueryValue ApplyBinary(BinaryOp op, const QueryValue& a, const QueryValue& b) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kMod:
      return Arithmetic(op, a, b);
    case BinaryOp::kAnd:
      return IsTrue(a) && IsTrue(b);
    case BinaryOp::kOr:
      return IsTrue(a) || IsTrue(b);
    case BinaryOp::kEqRegex:
    case BinaryOp::kNeqRegex:
      return std::monostate{};
    default:
      break;
  }
  if (a.index() == 0 || b.index() == 0) return false;
  const std::optional<bool> holds = ComparisonHolds(op, Compare(a, b));
  if (!holds) return std::monostate{};
  return *holds;
}

Result<QueryValue> ApplyMath(const std::string& name, const std::vector<QueryValue>& args) {
  for (const QueryValue& a : args) {
    if (a.index() == 0) return QueryValue{};
  }
  double x = 0;
  if (!ToDouble(args[0], &x)) {
    return Status::InvalidArgument(name + "() needs a number");
  }
  // Integers stay integers where the answer is one.
  if (name == "abs") {
    if (args[0].index() == 2) {
      const int64_t v = std::get<int64_t>(args[0]);
      return QueryValue(v == INT64_MIN ? v : (v < 0 ? -v : v));
    }
    if (args[0].index() == 3) return args[0];
    return QueryValue(std::fabs(x));
  }
  if (name == "ceil" || name == "floor" || name == "round") {
    if (args[0].index() != 1) return args[0];
    if (name == "ceil") return QueryValue(std::ceil(x));
    if (name == "floor") return QueryValue(std::floor(x));
    return QueryValue(std::round(x));
  }
  if (name == "sqrt") return x < 0 ? QueryValue{} : QueryValue(std::sqrt(x));
  if (name == "exp") return QueryValue(std::exp(x));
  if (name == "ln") return x <= 0 ? QueryValue{} : QueryValue(std::log(x));
  if (name == "log2") return x <= 0 ? QueryValue{} : QueryValue(std::log2(x));
  if (name == "log10") return x <= 0 ? QueryValue{} : QueryValue(std::log10(x));
  double y = 0;
  if (args.size() == 2 && !ToDouble(args[1], &y)) {
    return Status::InvalidArgument(name + "() needs numbers");
  }
  if (name == "pow") return QueryValue(std::pow(x, y));
  if (name == "log") {
    if (x <= 0 || y <= 0 || y == 1) return QueryValue{};
    return QueryValue(std::log(x) / std::log(y));
  }
  return Status::InvalidArgument("unknown function " + name + "()");
}

Result<std::vector<QueryValue>> ApplyTransformation(const std::string& name,
                                                    const std::vector<int64_t>& times,
                                                    const std::vector<QueryValue>& values,
                                                    int64_t arg2) {
  std::vector<QueryValue> out(values.size());
  const bool derivative = name == "derivative" || name == "non_negative_derivative";
  const bool difference = name == "difference" || name == "non_negative_difference";
  const bool non_negative = name == "non_negative_derivative" || name == "non_negative_difference";
  if (name == "cumulative_sum") {
    QueryValue sum;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].index() == 0) continue;
      sum = sum.index() == 0 ? values[i] : ApplyBinary(BinaryOp::kAdd, sum, values[i]);
      out[i] = sum;
    }
    return out;
  }
  if (name == "moving_average") {
    if (arg2 < 1) return Status::InvalidArgument("moving_average() needs a window of at least 1");
    std::vector<double> window;
    double sum = 0;
    size_t head = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      double x = 0;
      if (!ToDouble(values[i], &x)) continue;
      window.push_back(x);
      sum += x;
      if (window.size() - head > static_cast<size_t>(arg2)) sum -= window[head++];
      if (window.size() - head == static_cast<size_t>(arg2)) {
        // Re-add the window now and then so rounding does not drift.
        if (head % 1024 == 0) {
          sum = 0;
          for (size_t k = head; k < window.size(); ++k) sum += window[k];
        }
        out[i] = sum / static_cast<double>(arg2);
      }
    }
    return out;
  }
  if (name == "elapsed") {
    const int64_t unit = arg2 > 0 ? arg2 : 1;
    int64_t prev = 0;
    bool have = false;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].index() == 0) continue;
      if (have) out[i] = (times[i] - prev) / unit;
      prev = times[i];
      have = true;
    }
    return out;
  }
  const bool rate = name == "rate";
  const bool increase = name == "increase";
  if (!derivative && !difference && !rate && !increase) {
    return Status::InvalidArgument("unknown transformation " + name + "()");
  }
  const int64_t unit = arg2 > 0 ? arg2 : 1'000'000'000;
  QueryValue prev;
  int64_t prev_t = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const QueryValue& v = values[i];
    if (!IsNumeric(v)) continue;
    if (prev.index() != 0) {
      QueryValue delta = ApplyBinary(BinaryOp::kSub, v, prev);
      double d = 0, cur = 0;
      ToDouble(delta, &d);
      ToDouble(v, &cur);
      if ((rate || increase) && d < 0) {
        // A counter that went down was reset; it counted `cur` since.
        delta = v;
        d = cur;
      }
      const double dt = static_cast<double>(times[i] - prev_t) / static_cast<double>(unit);
      if (difference || increase) {
        if (!(non_negative && d < 0)) out[i] = delta;
      } else if (dt > 0) {
        const double r = d / dt;
        if (!(non_negative && r < 0)) out[i] = r;
      }
    }
    prev = v;
    prev_t = times[i];
  }
  return out;
}

}  // namespace gpulse::query
