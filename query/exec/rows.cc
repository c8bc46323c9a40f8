#include "query/exec/rows.h"

#include <algorithm>
#include <string>

#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

QueryValue EvalRow(const Expr& e, const Plan& plan, const RowRef& r, int64_t now_ns) {
  switch (e.kind) {
    case ExprKind::kVarRef: {
      if (plan.IsField(e)) {
        for (size_t f = 0; f < plan.fields.size(); ++f) {
          if (plan.fields[f] != e.text) continue;
          const int32_t p = (*r.pos)[f][r.row];
          return p < 0 ? QueryValue{} : CellOf((*r.cols)[f], static_cast<size_t>(p));
        }
        return std::monostate{};
      }
      return TagValue(r.series->tags, e.text);
    }
    case ExprKind::kInteger:
      return e.int_value;
    case ExprKind::kFloat:
      return e.float_value;
    case ExprKind::kString:
      return e.text;
    case ExprKind::kBool:
      return e.bool_value;
    case ExprKind::kDuration: {
      Result<int64_t> ns = DurationNanos(e);
      return ns.ok() ? QueryValue(*ns) : QueryValue{};
    }
    case ExprKind::kUnary: {
      QueryValue v = EvalRow(*e.children[0], plan, r, now_ns);
      if (e.unary_op == UnaryOp::kNot) return v.index() == 0 ? QueryValue{} : !IsTrue(v);
      return ApplyBinary(BinaryOp::kSub, int64_t{0}, v);
    }
    case ExprKind::kIn: {
      QueryValue v = EvalRow(*e.children[0], plan, r, now_ns);
      bool found = false;
      for (size_t i = 1; i < e.children.size() && !found; ++i) {
        found = IsTrue(ApplyBinary(BinaryOp::kEq, v, EvalRow(*e.children[i], plan, r, now_ns)));
      }
      return found != e.negated;
    }
    case ExprKind::kBinary: {
      if (e.binary_op == BinaryOp::kAnd || e.binary_op == BinaryOp::kOr) {
        const bool a = IsTrue(EvalRow(*e.children[0], plan, r, now_ns));
        if (e.binary_op == BinaryOp::kAnd && !a) return false;
        if (e.binary_op == BinaryOp::kOr && a) return true;
        return IsTrue(EvalRow(*e.children[1], plan, r, now_ns));
      }
      QueryValue a = EvalRow(*e.children[0], plan, r, now_ns);
      if (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex) {
        auto it = plan.regexes.find(e.children[1].get());
        if (a.index() != 5 || it == plan.regexes.end()) return e.binary_op == BinaryOp::kNeqRegex;
        const bool m = RegexSearch(*it->second, std::get<std::string>(a));
        return m == (e.binary_op == BinaryOp::kEqRegex);
      }
      return ApplyBinary(e.binary_op, a, EvalRow(*e.children[1], plan, r, now_ns));
    }
    case ExprKind::kCall: {
      if (e.text == "now") return now_ns;
      std::vector<QueryValue> args;
      for (const auto& c : e.children) args.push_back(EvalRow(*c, plan, r, now_ns));
      Result<QueryValue> v = ApplyMath(e.text, args);
      return v.ok() ? *v : QueryValue{};
    }
    default:
      return std::monostate{};
  }
}

std::optional<bool> TagTruth(const Expr& e, const Plan& plan, const InSeries& s) {
  if (e.kind == ExprKind::kBinary &&
      (e.binary_op == BinaryOp::kAnd || e.binary_op == BinaryOp::kOr)) {
    const auto a = TagTruth(*e.children[0], plan, s);
    const auto b = TagTruth(*e.children[1], plan, s);
    if (e.binary_op == BinaryOp::kAnd) {
      if ((a && !*a) || (b && !*b)) return false;
      if (a && b) return true;
      return std::nullopt;
    }
    if ((a && *a) || (b && *b)) return true;
    if (a && b) return false;
    return std::nullopt;
  }
  if (e.kind == ExprKind::kUnary && e.unary_op == UnaryOp::kNot) {
    const auto a = TagTruth(*e.children[0], plan, s);
    if (a) return !*a;
    return std::nullopt;
  }
  // A leaf condition: known when it names no field.
  if (NamesField(e, plan)) return std::nullopt;
  static const std::vector<Column> kNoCols;
  static const std::vector<std::vector<int32_t>> kNoPos;
  RowRef r{&s, &kNoCols, &kNoPos, 0};
  return IsTrue(EvalRow(e, plan, r, 0));
}

Result<std::vector<QueryValue>> EvalColumn(const Expr& e, const std::vector<int64_t>& times,
                                           const LeafFn& leaf) {
  const size_t n = times.size();
  switch (e.kind) {
    case ExprKind::kVarRef:
      return leaf(e);
    case ExprKind::kInteger:
      return std::vector<QueryValue>(n, e.int_value);
    case ExprKind::kFloat:
      return std::vector<QueryValue>(n, e.float_value);
    case ExprKind::kString:
      return std::vector<QueryValue>(n, e.text);
    case ExprKind::kBool:
      return std::vector<QueryValue>(n, e.bool_value);
    case ExprKind::kUnary: {
      auto v = EvalColumn(*e.children[0], times, leaf);
      if (!v.ok()) return v;
      for (QueryValue& x : *v) {
        x = e.unary_op == UnaryOp::kNot ? QueryValue(!IsTrue(x))
                                        : ApplyBinary(BinaryOp::kSub, int64_t{0}, x);
      }
      return v;
    }
    case ExprKind::kBinary: {
      if (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex) {
        return ErrorAt(e, "=~ and !~ belong in WHERE");
      }
      auto a = EvalColumn(*e.children[0], times, leaf);
      if (!a.ok()) return a;
      auto b = EvalColumn(*e.children[1], times, leaf);
      if (!b.ok()) return b;
      for (size_t i = 0; i < n; ++i) (*a)[i] = ApplyBinary(e.binary_op, (*a)[i], (*b)[i]);
      return a;
    }
    case ExprKind::kCall: {
      const FunctionKind k = KindOf(e);
      if (k == FunctionKind::kAggregate || k == FunctionKind::kSelector) return leaf(e);
      if (k == FunctionKind::kTransformation) {
        auto v = EvalColumn(*e.children[0], times, leaf);
        if (!v.ok()) return v;
        int64_t arg2 = 0;
        if (e.children.size() == 2) {
          const Expr& a = *e.children[1];
          if (a.kind == ExprKind::kDuration) {
            Result<int64_t> ns = DurationNanos(a);
            if (!ns.ok()) return ns.status();
            arg2 = *ns;
          } else if (a.kind == ExprKind::kInteger) {
            arg2 = a.int_value;
          } else {
            return ErrorAt(a, e.text + "() takes a duration or an integer as its second argument");
          }
          if (e.text == "increase") return ErrorAt(a, "increase() takes one argument");
        }
        return ApplyTransformation(e.text, times, *v, arg2);
      }
      if (k == FunctionKind::kMath) {
        std::vector<std::vector<QueryValue>> args;
        for (const auto& c : e.children) {
          auto v = EvalColumn(*c, times, leaf);
          if (!v.ok()) return v;
          args.push_back(std::move(*v));
        }
        std::vector<QueryValue> out(n);
        std::vector<QueryValue> row(args.size());
        for (size_t i = 0; i < n; ++i) {
          for (size_t a = 0; a < args.size(); ++a) row[a] = args[a][i];
          Result<QueryValue> v = ApplyMath(e.text, row);
          if (!v.ok()) return ErrorAt(e, v.status().message());
          out[i] = std::move(*v);
        }
        return out;
      }
      return ErrorAt(e, e.text + "() is not available yet");
    }
    default:
      return ErrorAt(e, e.ToString() + " cannot be selected");
  }
}

void OrderAndLimit(const SelectStatement& s, ResultSeries* rs) {
  if (s.order == SortOrder::kDesc) std::reverse(rs->values.begin(), rs->values.end());
  const size_t off = static_cast<size_t>(std::max<int64_t>(0, s.offset.value_or(0)));
  if (off > 0) {
    rs->values.erase(rs->values.begin(),
                     rs->values.begin() + static_cast<ptrdiff_t>(std::min(off, rs->values.size())));
  }
  if (s.limit && *s.limit > 0 && rs->values.size() > static_cast<size_t>(*s.limit)) {
    rs->values.resize(static_cast<size_t>(*s.limit));
  }
}

}  // namespace gpulse::query
