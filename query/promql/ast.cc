#include "query/promql/ast.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "query/promql/functions.h"
#include "query/promql/lexer.h"

namespace gpulse::query::promql {

namespace {

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
          out += hex;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

const char* MatchOpText(MatchOp op) {
  switch (op) {
    case MatchOp::kEqual:
      return "=";
    case MatchOp::kNotEqual:
      return "!=";
    case MatchOp::kRegex:
      return "=~";
    case MatchOp::kNotRegex:
      return "!~";
  }
  return "=";
}

std::string Join(const std::vector<std::string>& labels) {
  std::string out;
  for (const std::string& l : labels) out += (out.empty() ? "" : ", ") + l;
  return out;
}

// " @ 100.000 offset 5m", as Prometheus prints a selector's modifiers.
std::string Modifiers(const Expr& e) {
  std::string out;
  switch (e.at) {
    case AtKind::kTimestamp: {
      // Seconds with three decimals, by integer arithmetic: exact.
      const int64_t ms = e.at_ms;
      const uint64_t abs = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
      char buf[48];
      std::snprintf(buf, sizeof buf, " @ %s%llu.%03llu", ms < 0 ? "-" : "",
                    static_cast<unsigned long long>(abs / 1000),
                    static_cast<unsigned long long>(abs % 1000));
      out += buf;
      break;
    }
    case AtKind::kStart:
      out += " @ start()";
      break;
    case AtKind::kEnd:
      out += " @ end()";
      break;
    case AtKind::kNone:
      break;
  }
  if (e.has_offset) out += " offset " + FormatPromDuration(e.offset_ms);
  return out;
}

std::string SelectorText(const Expr& e) {
  std::string out = e.text;
  std::string inside;
  for (const LabelMatcher& m : e.matchers) {
    if (!e.text.empty() && m.name == "__name__" && m.op == MatchOp::kEqual && m.value == e.text) {
      continue;
    }
    inside += (inside.empty() ? "" : ", ") + m.name + MatchOpText(m.op) + Quote(m.value);
  }
  if (!inside.empty() || e.text.empty()) out += "{" + inside + "}";
  return out;
}

}  // namespace

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kScalar:
      return "scalar";
    case ValueType::kVector:
      return "instant vector";
    case ValueType::kMatrix:
      return "range vector";
    case ValueType::kString:
      return "string";
  }
  return "value";
}

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEql || op == BinaryOp::kNeq || op == BinaryOp::kGtr ||
         op == BinaryOp::kLss || op == BinaryOp::kGte || op == BinaryOp::kLte;
}

bool IsSetOperator(BinaryOp op) {
  return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kUnless;
}

const char* BinaryOpText(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "^";
    case BinaryOp::kAtan2:
      return "atan2";
    case BinaryOp::kEql:
      return "==";
    case BinaryOp::kNeq:
      return "!=";
    case BinaryOp::kGtr:
      return ">";
    case BinaryOp::kLss:
      return "<";
    case BinaryOp::kGte:
      return ">=";
    case BinaryOp::kLte:
      return "<=";
    case BinaryOp::kAnd:
      return "and";
    case BinaryOp::kOr:
      return "or";
    case BinaryOp::kUnless:
      return "unless";
  }
  return "?";
}

const char* AggregateOpName(AggregateOp op) {
  switch (op) {
    case AggregateOp::kSum:
      return "sum";
    case AggregateOp::kAvg:
      return "avg";
    case AggregateOp::kMin:
      return "min";
    case AggregateOp::kMax:
      return "max";
    case AggregateOp::kCount:
      return "count";
    case AggregateOp::kGroup:
      return "group";
    case AggregateOp::kStddev:
      return "stddev";
    case AggregateOp::kStdvar:
      return "stdvar";
    case AggregateOp::kTopk:
      return "topk";
    case AggregateOp::kBottomk:
      return "bottomk";
    case AggregateOp::kQuantile:
      return "quantile";
    case AggregateOp::kCountValues:
      return "count_values";
  }
  return "?";
}

ValueType Expr::type() const {
  switch (kind) {
    case Kind::kNumber:
      return ValueType::kScalar;
    case Kind::kString:
      return ValueType::kString;
    case Kind::kVectorSelector:
    case Kind::kAggregate:
      return ValueType::kVector;
    case Kind::kMatrixSelector:
    case Kind::kSubquery:
      return ValueType::kMatrix;
    case Kind::kCall: {
      const Function* f = FindFunction(text);
      return f != nullptr ? f->returns : ValueType::kVector;
    }
    case Kind::kBinary:
      return args[0]->type() == ValueType::kScalar && args[1]->type() == ValueType::kScalar
                 ? ValueType::kScalar
                 : ValueType::kVector;
    case Kind::kUnary:
    case Kind::kParen:
      return args[0]->type();
  }
  return ValueType::kVector;
}

std::string Expr::ToString() const {
  switch (kind) {
    case Kind::kNumber:
      return FormatNumber(number);
    case Kind::kString:
      return Quote(text);
    case Kind::kVectorSelector:
      return SelectorText(*this) + Modifiers(*this);
    case Kind::kMatrixSelector:
      return SelectorText(*args[0]) + "[" + FormatPromDuration(range_ms) + "]" +
             Modifiers(*args[0]);
    case Kind::kSubquery:
      return args[0]->ToString() + "[" + FormatPromDuration(range_ms) + ":" +
             (step_ms > 0 ? FormatPromDuration(step_ms) : "") + "]" + Modifiers(*this);
    case Kind::kCall: {
      std::string out = text + "(";
      for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i]->ToString();
      return out + ")";
    }
    case Kind::kAggregate: {
      std::string out = AggregateOpName(aggregate);
      if (has_grouping)
        out += std::string(without ? " without (" : " by (") + Join(grouping) + ") ";
      out += "(";
      for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i]->ToString();
      return out + ")";
    }
    case Kind::kBinary: {
      std::string out = args[0]->ToString() + " " + BinaryOpText(op);
      if (return_bool) out += " bool";
      if (matching.explicit_matching) {
        out += std::string(matching.on ? " on(" : " ignoring(") + Join(matching.labels) + ")";
      }
      if (matching.card == Cardinality::kManyToOne) {
        out += " group_left(" + Join(matching.include) + ")";
      } else if (matching.card == Cardinality::kOneToMany) {
        out += " group_right(" + Join(matching.include) + ")";
      }
      return out + " " + args[1]->ToString();
    }
    case Kind::kUnary:
      return (negative ? "-" : "+") + args[0]->ToString();
    case Kind::kParen:
      return "(" + args[0]->ToString() + ")";
  }
  return "";
}

bool Expr::Equals(const Expr& o) const {
  if (kind != o.kind || args.size() != o.args.size()) return false;
  const bool same_number = (std::isnan(number) && std::isnan(o.number)) || number == o.number;
  if (!same_number || text != o.text || matchers != o.matchers || range_ms != o.range_ms ||
      step_ms != o.step_ms || offset_ms != o.offset_ms || has_offset != o.has_offset ||
      at != o.at || at_ms != o.at_ms || aggregate != o.aggregate || grouping != o.grouping ||
      without != o.without || has_grouping != o.has_grouping || op != o.op ||
      return_bool != o.return_bool || matching != o.matching || negative != o.negative) {
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]->Equals(*o.args[i])) return false;
  }
  return true;
}

}  // namespace gpulse::query::promql
