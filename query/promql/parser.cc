#include "query/promql/parser.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include "query/promql/functions.h"
#include "query/promql/lexer.h"

namespace gpulse::query::promql {

namespace {

using Kind = Expr::Kind;
using TK = PromTokenKind;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<AggregateOp> AggregateOf(std::string_view name) {
  static const std::pair<const char*, AggregateOp> kOps[] = {
      {"sum", AggregateOp::kSum},           {"avg", AggregateOp::kAvg},
      {"min", AggregateOp::kMin},           {"max", AggregateOp::kMax},
      {"count", AggregateOp::kCount},       {"group", AggregateOp::kGroup},
      {"stddev", AggregateOp::kStddev},     {"stdvar", AggregateOp::kStdvar},
      {"topk", AggregateOp::kTopk},         {"bottomk", AggregateOp::kBottomk},
      {"quantile", AggregateOp::kQuantile}, {"count_values", AggregateOp::kCountValues}};
  const std::string lower = Lower(name);
  for (const auto& [text, op] : kOps) {
    if (lower == text) return op;
  }
  return std::nullopt;
}

// Words that are never a bare metric name (Prometheus' keywords besides the
// aggregations).
bool IsKeyword(std::string_view name) {
  static const char* const kWords[] = {"by",         "without",     "on",     "ignoring",
                                       "group_left", "group_right", "bool",   "offset",
                                       "and",        "or",          "unless", "atan2"};
  const std::string lower = Lower(name);
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  return false;
}

bool IsLabelName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The binary operator a token is, with its precedence (higher binds
// tighter); nullopt for a token that is none.
struct OpInfo {
  BinaryOp op;
  int precedence;
};
std::optional<OpInfo> BinaryOpOf(const PromToken& t) {
  switch (t.kind) {
    case TK::kPlus:
      return OpInfo{BinaryOp::kAdd, 4};
    case TK::kMinus:
      return OpInfo{BinaryOp::kSub, 4};
    case TK::kStar:
      return OpInfo{BinaryOp::kMul, 5};
    case TK::kSlash:
      return OpInfo{BinaryOp::kDiv, 5};
    case TK::kPercent:
      return OpInfo{BinaryOp::kMod, 5};
    case TK::kCaret:
      return OpInfo{BinaryOp::kPow, 6};
    case TK::kEqlEql:
      return OpInfo{BinaryOp::kEql, 3};
    case TK::kNeq:
      return OpInfo{BinaryOp::kNeq, 3};
    case TK::kGtr:
      return OpInfo{BinaryOp::kGtr, 3};
    case TK::kLss:
      return OpInfo{BinaryOp::kLss, 3};
    case TK::kGte:
      return OpInfo{BinaryOp::kGte, 3};
    case TK::kLte:
      return OpInfo{BinaryOp::kLte, 3};
    case TK::kIdentifier: {
      const std::string w = Lower(t.text);
      if (w == "and") return OpInfo{BinaryOp::kAnd, 2};
      if (w == "unless") return OpInfo{BinaryOp::kUnless, 2};
      if (w == "or") return OpInfo{BinaryOp::kOr, 1};
      if (w == "atan2") return OpInfo{BinaryOp::kAtan2, 5};
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}
constexpr int kUnaryPrecedence = 5;  // as *: -a * b is (-a) * b, -a ^ b is -(a ^ b)

class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) {}

  bool Start() { return Advance(); }
  const ParseError& error() const { return error_; }

  std::unique_ptr<Expr> ParseAll() {
    auto e = ParseExpr(0);
    if (e == nullptr) return nullptr;
    if (tok_.kind != TK::kEof) return Fail(Expected("an operator or end of input"));
    return e;
  }

  std::unique_ptr<Expr> ParseSelectorOnly() {
    auto e = ParsePrimary();
    if (e == nullptr) return nullptr;
    if (e->kind != Kind::kVectorSelector) {
      return Fail(AtPos(e->pos, "a series selector is a metric name or {matchers}, not " +
                                    std::string(ValueTypeName(e->type())) + " " + e->ToString()));
    }
    if (tok_.kind != TK::kEof) return Fail(Expected("end of input"));
    return e;
  }

 private:
  // --- tokens and errors ---
  bool Advance() {
    if (!lexer_.Next(&tok_, &error_)) {
      failed_ = true;
      return false;
    }
    return true;
  }
  bool IsWord(const char* word) const {
    return tok_.kind == TK::kIdentifier && Lower(tok_.text) == word;
  }
  ParseError Expected(const std::string& what) const {
    ParseError e;
    e.pos = tok_.pos;
    e.expected = what;
    e.found = DescribeToken(tok_);
    return e;
  }
  static ParseError AtPos(Position pos, std::string message) {
    ParseError e;
    e.pos = pos;
    e.message = std::move(message);
    return e;
  }
  std::nullptr_t Fail(ParseError e) {
    if (!failed_) error_ = std::move(e);
    failed_ = true;
    return nullptr;
  }
  bool Expect(TK kind, const char* what) {
    if (tok_.kind != kind) {
      Fail(Expected(what));
      return false;
    }
    return Advance();
  }

  // --- expressions ---
  std::unique_ptr<Expr> ParseExpr(int min_precedence) {
    if (++depth_ > kMaxPromQLNesting) {
      return Fail(AtPos(tok_.pos, "expression nested deeper than " +
                                      std::to_string(kMaxPromQLNesting) + " levels"));
    }
    std::unique_ptr<Expr> lhs = ParseUnary();
    while (lhs != nullptr) {
      const std::optional<OpInfo> info = BinaryOpOf(tok_);
      if (!info || info->precedence < min_precedence) break;
      const Position pos = tok_.pos;
      if (!Advance()) return nullptr;
      auto e = std::make_unique<Expr>();
      e->kind = Kind::kBinary;
      e->pos = pos;
      e->op = info->op;
      if (!ParseBinaryModifiers(e.get())) return nullptr;
      // ^ groups to the right; the others to the left.
      const int next = info->op == BinaryOp::kPow ? info->precedence : info->precedence + 1;
      std::unique_ptr<Expr> rhs = ParseExpr(next);
      if (rhs == nullptr) return nullptr;
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      if (!CheckBinary(*e)) return nullptr;
      if (IsSetOperator(e->op)) e->matching.card = Cardinality::kManyToMany;
      lhs = std::move(e);
    }
    --depth_;
    return lhs;
  }

  std::unique_ptr<Expr> ParseUnary() {
    if (tok_.kind != TK::kMinus && tok_.kind != TK::kPlus) return ParsePostfix(ParsePrimary());
    const Position pos = tok_.pos;
    const bool negative = tok_.kind == TK::kMinus;
    if (!Advance()) return nullptr;
    std::unique_ptr<Expr> operand = ParseExpr(kUnaryPrecedence + 1);
    if (operand == nullptr) return nullptr;
    if (operand->kind == Kind::kNumber) {  // -1 is the number -1, as in Prometheus
      if (negative) operand->number = -operand->number;
      operand->pos = pos;
      return operand;
    }
    const ValueType t = operand->type();
    if (t != ValueType::kScalar && t != ValueType::kVector) {
      return Fail(AtPos(pos, std::string("unary expression only allowed on expressions of type "
                                         "scalar or instant vector, got ") +
                                 ValueTypeName(t)));
    }
    auto e = std::make_unique<Expr>();
    e->kind = Kind::kUnary;
    e->pos = pos;
    e->negative = negative;
    e->args.push_back(std::move(operand));
    return e;
  }

  // bool, on(...)/ignoring(...), group_left(...)/group_right(...), after
  // a binary operator.
  bool ParseBinaryModifiers(Expr* e) {
    if (IsWord("bool")) {
      e->return_bool = true;
      if (!Advance()) return false;
    }
    if (IsWord("on") || IsWord("ignoring")) {
      e->matching.on = IsWord("on");
      e->matching.explicit_matching = true;
      if (!Advance() || !ParseLabelList(&e->matching.labels)) return false;
    }
    if (IsWord("group_left") || IsWord("group_right")) {
      e->matching.card = IsWord("group_left") ? Cardinality::kManyToOne : Cardinality::kOneToMany;
      e->matching.explicit_group = true;
      if (!Advance()) return false;
      if (tok_.kind == TK::kLParen && !ParseLabelList(&e->matching.include)) return false;
    }
    return true;
  }

  // After an element of a list: a comma (consumed), or the list's `close`
  // (left for the caller); anything else fails naming `expected`.
  bool ListSeparator(TK close, const char* expected) {
    if (tok_.kind == TK::kComma) return Advance();
    if (tok_.kind == close) return true;
    Fail(Expected(expected));
    return false;
  }

  // ( label, label, ... ) with a trailing comma allowed; keywords are names.
  bool ParseLabelList(std::vector<std::string>* labels) {
    if (!Expect(TK::kLParen, "'('")) return false;
    while (tok_.kind != TK::kRParen) {
      if (tok_.kind != TK::kIdentifier || !IsLabelName(tok_.text)) {
        Fail(Expected("a label name"));
        return false;
      }
      labels->emplace_back(tok_.text);
      if (!Advance()) return false;
      if (!ListSeparator(TK::kRParen, "',' or ')'")) return false;
    }
    return Advance();
  }

  std::unique_ptr<Expr> ParsePrimary() {
    const Position pos = tok_.pos;
    switch (tok_.kind) {
      case TK::kNumber: {
        auto e = std::make_unique<Expr>();
        e->kind = Kind::kNumber;
        e->pos = pos;
        e->number = tok_.number;
        if (!Advance()) return nullptr;
        return e;
      }
      case TK::kString: {
        auto e = std::make_unique<Expr>();
        e->kind = Kind::kString;
        e->pos = pos;
        e->text = std::move(tok_.value);
        if (!Advance()) return nullptr;
        return e;
      }
      case TK::kLParen: {
        if (!Advance()) return nullptr;
        auto inner = ParseExpr(0);
        if (inner == nullptr || !Expect(TK::kRParen, "')'")) return nullptr;
        auto e = std::make_unique<Expr>();
        e->kind = Kind::kParen;
        e->pos = pos;
        e->args.push_back(std::move(inner));
        return e;
      }
      case TK::kLBrace:
        return ParseSelector(pos, "");
      case TK::kIdentifier:
        return ParseNamed(pos);
      case TK::kDuration:
        return Fail(AtPos(pos, "a duration (" + std::string(tok_.text) +
                                   ") is no value: it goes in [ranges], offset and subqueries"));
      default:
        return Fail(Expected("an expression"));
    }
  }

  // A name in value position: an aggregation, a call, Inf or NaN, or a
  // metric name.
  std::unique_ptr<Expr> ParseNamed(Position pos) {
    const std::string name(tok_.text);
    if (const std::optional<AggregateOp> op = AggregateOf(name)) {
      if (!Advance()) return nullptr;
      if (tok_.kind == TK::kLParen || IsWord("by") || IsWord("without")) {
        return ParseAggregate(pos, *op);
      }
      return Fail(AtPos(pos, "\"" + name + "\" is an aggregation: " + name +
                                 "(...), or select the metric as {__name__=\"" + name + "\"}"));
    }
    const std::string lower = Lower(name);
    if (lower == "inf" || lower == "nan") {
      auto e = std::make_unique<Expr>();
      e->kind = Kind::kNumber;
      e->pos = pos;
      e->number = lower == "inf" ? INFINITY : NAN;
      if (!Advance()) return nullptr;
      return e;
    }
    if (IsKeyword(name)) return Fail(Expected("an expression"));
    if (!Advance()) return nullptr;
    if (tok_.kind == TK::kLParen) return ParseCall(pos, name);
    return ParseSelector(pos, name);
  }

  // Expressions separated by commas up to ')' (consumed), into e->args.
  bool ParseArguments(Expr* e) {
    while (tok_.kind != TK::kRParen) {
      auto arg = ParseExpr(0);
      if (arg == nullptr) return false;
      e->args.push_back(std::move(arg));
      if (!ListSeparator(TK::kRParen, "',' or ')'")) return false;
    }
    return Advance();
  }

  std::unique_ptr<Expr> ParseCall(Position pos, const std::string& name) {
    const Function* f = FindFunction(name);
    if (f == nullptr) return Fail(AtPos(pos, "unknown function with name \"" + name + "\""));
    if (!Advance()) return nullptr;  // (
    auto e = std::make_unique<Expr>();
    e->kind = Kind::kCall;
    e->pos = pos;
    e->text = name;
    if (!ParseArguments(e.get())) return nullptr;
    if (!CheckCall(*e, *f)) return nullptr;
    return e;
  }

  std::unique_ptr<Expr> ParseAggregate(Position pos, AggregateOp op) {
    auto e = std::make_unique<Expr>();
    e->kind = Kind::kAggregate;
    e->pos = pos;
    e->aggregate = op;
    const auto grouping = [&]() {
      if (e->has_grouping) {
        Fail(AtPos(tok_.pos, "by or without may be given once"));
        return false;
      }
      e->without = IsWord("without");
      e->has_grouping = true;
      return Advance() && ParseLabelList(&e->grouping);
    };
    if ((IsWord("by") || IsWord("without")) && !grouping()) return nullptr;
    if (!Expect(TK::kLParen, "'('")) return nullptr;
    if (!ParseArguments(e.get())) return nullptr;
    if ((IsWord("by") || IsWord("without")) && !grouping()) return nullptr;
    if (!CheckAggregate(*e)) return nullptr;
    return e;
  }

  // metric{matchers} or {matchers}; `name` empty for the second.
  std::unique_ptr<Expr> ParseSelector(Position pos, const std::string& name) {
    auto e = std::make_unique<Expr>();
    e->kind = Kind::kVectorSelector;
    e->pos = pos;
    e->text = name;
    if (!name.empty()) e->matchers.push_back({"__name__", MatchOp::kEqual, name});
    if (tok_.kind == TK::kLBrace) {
      if (!Advance()) return nullptr;
      while (tok_.kind != TK::kRBrace) {
        if (!ParseMatcher(e.get())) return nullptr;
        if (!ListSeparator(TK::kRBrace, "',' or '}'")) return nullptr;
      }
      if (!Advance()) return nullptr;
    }
    // At least one matcher must select something: {} or {a=""} alone would
    // select every series there is.
    const bool selective = std::any_of(e->matchers.begin(), e->matchers.end(),
                                       [](const LabelMatcher& m) { return !MatchesEmpty(m); });
    if (!selective) {
      return Fail(AtPos(pos, "vector selector must contain at least one non-empty matcher"));
    }
    return e;
  }

  bool ParseMatcher(Expr* e) {
    const Position pos = tok_.pos;
    if (tok_.kind != TK::kIdentifier || !IsLabelName(tok_.text)) {
      Fail(Expected("a label name"));
      return false;
    }
    LabelMatcher m;
    m.name = std::string(tok_.text);
    if (!Advance()) return false;
    switch (tok_.kind) {
      case TK::kAssign:
        m.op = MatchOp::kEqual;
        break;
      case TK::kNeq:
        m.op = MatchOp::kNotEqual;
        break;
      case TK::kEqlRegex:
        m.op = MatchOp::kRegex;
        break;
      case TK::kNeqRegex:
        m.op = MatchOp::kNotRegex;
        break;
      default:
        Fail(Expected("one of '=', '!=', '=~', '!~'"));
        return false;
    }
    if (!Advance()) return false;
    if (tok_.kind != TK::kString) {
      Fail(Expected("a quoted label value"));
      return false;
    }
    m.value = std::move(tok_.value);
    if (m.op == MatchOp::kRegex || m.op == MatchOp::kNotRegex) {
      const re2::RE2 re(m.value, re2::RE2::Quiet);  // anchored when matched
      if (!re.ok()) {
        Fail(AtPos(tok_.pos, "invalid regular expression in label matcher: " + re.error()));
        return false;
      }
    }
    if (m.name == "__name__" && m.op == MatchOp::kEqual && !e->text.empty()) {
      Fail(AtPos(pos,
                 "metric name must not be set twice: \"" + e->text + "\" or \"" + m.value + "\""));
      return false;
    }
    e->matchers.push_back(std::move(m));
    return Advance();
  }

  static bool MatchesEmpty(const LabelMatcher& m) {
    switch (m.op) {
      case MatchOp::kEqual:
        return m.value.empty();
      case MatchOp::kNotEqual:
        return !m.value.empty();
      case MatchOp::kRegex:
      case MatchOp::kNotRegex: {
        const re2::RE2 re("^(?:" + m.value + ")$", re2::RE2::Quiet);
        const bool empty = re2::RE2::FullMatch("", re);
        return m.op == MatchOp::kRegex ? empty : !empty;
      }
    }
    return true;
  }

  // [range], [range:step], offset and @ after a primary expression.
  std::unique_ptr<Expr> ParsePostfix(std::unique_ptr<Expr> e) {
    while (e != nullptr) {
      if (tok_.kind == TK::kLBracket) {
        e = ParseRange(std::move(e));
      } else if (IsWord("offset")) {
        e = ParseOffset(std::move(e));
      } else if (tok_.kind == TK::kAt) {
        e = ParseAt(std::move(e));
      } else {
        break;
      }
    }
    return e;
  }

  std::unique_ptr<Expr> ParseRange(std::unique_ptr<Expr> inner) {
    const Position pos = tok_.pos;
    if (!Advance()) return nullptr;
    if (tok_.kind != TK::kDuration) return Fail(Expected("a duration such as 5m"));
    const int64_t range = tok_.duration_ms;
    if (!Advance()) return nullptr;
    auto e = std::make_unique<Expr>();
    e->pos = inner->pos;  // where the ranged expression starts
    e->range_ms = range;
    if (tok_.kind == TK::kColon) {
      if (!Advance()) return nullptr;
      if (tok_.kind == TK::kDuration) {
        e->step_ms = tok_.duration_ms;
        if (!Advance()) return nullptr;
      }
      if (!Expect(TK::kRBracket, "']'")) return nullptr;
      if (inner->type() != ValueType::kVector) {
        return Fail(AtPos(pos, std::string("subquery is only allowed on instant vector, got ") +
                                   ValueTypeName(inner->type()) + " in \"" + inner->ToString() +
                                   "\""));
      }
      e->kind = Kind::kSubquery;
      e->args.push_back(std::move(inner));
      return e;
    }
    if (!Expect(TK::kRBracket, "']' or ':'")) return nullptr;
    if (inner->kind != Kind::kVectorSelector) {
      return Fail(AtPos(pos, "ranges only allowed for vector selectors"));
    }
    if (inner->has_offset || inner->at != AtKind::kNone) {
      return Fail(AtPos(pos, "a range goes before offset and @: foo[5m] offset 1h"));
    }
    e->kind = Kind::kMatrixSelector;
    e->args.push_back(std::move(inner));
    return e;
  }

  // The expression offset and @ apply to: a selector, a matrix selector's
  // selector, or a subquery; nullptr for anything else.
  static Expr* ModifierTarget(Expr* e) {
    if (e->kind == Kind::kVectorSelector || e->kind == Kind::kSubquery) return e;
    if (e->kind == Kind::kMatrixSelector) return e->args[0].get();
    return nullptr;
  }

  // ModifierTarget, or nullptr with the error, which names `what`.
  Expr* TargetOf(Expr* e, const char* what, Position pos) {
    Expr* target = ModifierTarget(e);
    if (target == nullptr) {
      Fail(AtPos(pos, std::string(what) +
                          " must be preceded by an instant vector selector or range vector "
                          "selector or a subquery"));
    }
    return target;
  }

  std::unique_ptr<Expr> ParseOffset(std::unique_ptr<Expr> e) {
    const Position pos = tok_.pos;
    Expr* target = TargetOf(e.get(), "offset modifier", pos);
    if (target == nullptr) return nullptr;
    if (target->has_offset) return Fail(AtPos(pos, "offset may not be set multiple times"));
    if (!Advance()) return nullptr;
    bool negative = false;
    if (tok_.kind == TK::kMinus) {
      negative = true;
      if (!Advance()) return nullptr;
    }
    if (tok_.kind != TK::kDuration) return Fail(Expected("a duration such as 5m"));
    target->offset_ms = negative ? -tok_.duration_ms : tok_.duration_ms;
    target->has_offset = true;
    if (!Advance()) return nullptr;
    return e;
  }

  std::unique_ptr<Expr> ParseAt(std::unique_ptr<Expr> e) {
    const Position pos = tok_.pos;
    Expr* target = TargetOf(e.get(), "@ modifier", pos);
    if (target == nullptr) return nullptr;
    if (target->at != AtKind::kNone) return Fail(AtPos(pos, "@ may not be set multiple times"));
    if (!Advance()) return nullptr;
    if (IsWord("start") || IsWord("end")) {
      target->at = IsWord("start") ? AtKind::kStart : AtKind::kEnd;
      if (!Advance() || !Expect(TK::kLParen, "'('") || !Expect(TK::kRParen, "')'")) {
        return nullptr;
      }
      return e;
    }
    bool negative = false;
    if (tok_.kind == TK::kMinus || tok_.kind == TK::kPlus) {
      negative = tok_.kind == TK::kMinus;
      if (!Advance()) return nullptr;
    }
    if (tok_.kind != TK::kNumber) return Fail(Expected("a Unix time in seconds, start() or end()"));
    const double seconds = negative ? -tok_.number : tok_.number;
    // Milliseconds in int64, as Prometheus keeps them; bounded where a
    // double still holds every millisecond (past the year 5000).
    if (!std::isfinite(seconds) || std::fabs(seconds) > 1e11) {
      return Fail(AtPos(tok_.pos, "timestamp out of bounds for @ modifier"));
    }
    target->at = AtKind::kTimestamp;
    target->at_ms = static_cast<int64_t>(std::llround(seconds * 1000));
    if (!Advance()) return nullptr;
    return e;
  }

  // --- type checks, as Prometheus' ---
  bool CheckBinary(const Expr& e) {
    const ValueType l = e.args[0]->type(), r = e.args[1]->type();
    const auto fail = [&](const std::string& what) {
      Fail(AtPos(e.pos, what));
      return false;
    };
    if ((l != ValueType::kScalar && l != ValueType::kVector) ||
        (r != ValueType::kScalar && r != ValueType::kVector)) {
      return fail("binary expression must contain only scalar and instant vector types");
    }
    const bool vectors = l == ValueType::kVector && r == ValueType::kVector;
    if (e.return_bool && !IsComparison(e.op)) {
      return fail("bool modifier can only be used on comparison operators");
    }
    if (IsComparison(e.op) && !e.return_bool && l == ValueType::kScalar &&
        r == ValueType::kScalar) {
      return fail("comparisons between scalars must use BOOL modifier");
    }
    if (IsSetOperator(e.op) && !vectors) {
      return fail(std::string("set operator \"") + BinaryOpText(e.op) +
                  "\" not allowed in binary scalar expression");
    }
    if ((e.matching.explicit_matching || e.matching.explicit_group) && !vectors) {
      return fail("vector matching only allowed between instant vectors");
    }
    if (IsSetOperator(e.op) && e.matching.explicit_group) {
      return fail(std::string("no grouping allowed for \"") + BinaryOpText(e.op) + "\" operation");
    }
    if (e.matching.on) {
      for (const std::string& l2 : e.matching.include) {
        if (std::find(e.matching.labels.begin(), e.matching.labels.end(), l2) !=
            e.matching.labels.end()) {
          return fail("label \"" + l2 + "\" must not occur in ON and GROUP clause at once");
        }
      }
    }
    return true;
  }

  bool CheckCall(Expr& e, const Function& f) {
    const size_t n = e.args.size(), declared = f.args.size();
    const auto count_error = [&](const std::string& expected) {
      Fail(AtPos(e.pos, "expected " + expected + " argument(s) in call to \"" + e.text +
                            "\", got " + std::to_string(n)));
      return false;
    };
    if (f.variadic == 0 && n != declared) return count_error(std::to_string(declared));
    if (f.variadic > 0) {
      const size_t least = declared - static_cast<size_t>(f.variadic);
      if (n < least || n > declared) {
        return count_error(least == declared - 1 && least + 1 == declared
                               ? std::to_string(least) + " or " + std::to_string(declared)
                               : "between " + std::to_string(least) + " and " +
                                     std::to_string(declared));
      }
    }
    if (f.variadic < 0 && n + 1 < declared) {
      return count_error("at least " + std::to_string(declared - 1));
    }
    for (size_t i = 0; i < n; ++i) {
      const ValueType want = f.args[std::min(i, declared - 1)];
      const ValueType got = e.args[i]->type();
      if (got != want) {
        Fail(AtPos(e.args[i]->pos, std::string("expected type ") + ValueTypeName(want) +
                                       " in call to function \"" + e.text + "\", got " +
                                       ValueTypeName(got)));
        return false;
      }
    }
    return true;
  }

  bool CheckAggregate(const Expr& e) {
    const bool takes_param =
        e.aggregate == AggregateOp::kTopk || e.aggregate == AggregateOp::kBottomk ||
        e.aggregate == AggregateOp::kQuantile || e.aggregate == AggregateOp::kCountValues;
    const size_t want = takes_param ? 2 : 1;
    if (e.args.size() != want) {
      Fail(AtPos(e.pos, "wrong number of arguments for aggregate expression provided, expected " +
                            std::to_string(want) + ", got " + std::to_string(e.args.size())));
      return false;
    }
    const ValueType got = e.args.back()->type();
    if (got != ValueType::kVector) {
      Fail(AtPos(e.args.back()->pos,
                 std::string("expected type instant vector in aggregation expression, got ") +
                     ValueTypeName(got)));
      return false;
    }
    if (takes_param) {
      const ValueType param =
          e.aggregate == AggregateOp::kCountValues ? ValueType::kString : ValueType::kScalar;
      if (e.args[0]->type() != param) {
        Fail(AtPos(e.args[0]->pos, std::string("expected type ") + ValueTypeName(param) +
                                       " in aggregation parameter, got " +
                                       ValueTypeName(e.args[0]->type())));
        return false;
      }
    }
    return true;
  }

  Lexer lexer_;
  PromToken tok_;
  ParseError error_;
  bool failed_ = false;
  int depth_ = 0;
};

template <typename Run>
Result<std::unique_ptr<Expr>> Parse(std::string_view text, ParseError* error, Run run) {
  ParseError local;
  ParseError& err = error != nullptr ? *error : local;
  if (text.size() > kMaxPromQLBytes) {
    err = ParseError();
    err.message = "query of " + std::to_string(text.size()) + " bytes is longer than the " +
                  std::to_string(kMaxPromQLBytes) + " bytes a PromQL query may have";
    return Status::InvalidArgument(err.ToString());
  }
  Parser parser(text);
  std::unique_ptr<Expr> e;
  if (parser.Start()) e = run(parser);
  if (e == nullptr) {
    err = parser.error();
    return Status::InvalidArgument(err.ToString());
  }
  return e;
}

}  // namespace

Result<std::unique_ptr<Expr>> ParsePromQL(std::string_view text, ParseError* error) {
  return Parse(text, error, [](Parser& p) { return p.ParseAll(); });
}

Result<std::unique_ptr<Expr>> ParseSeriesSelector(std::string_view text, ParseError* error) {
  return Parse(text, error, [](Parser& p) { return p.ParseSelectorOnly(); });
}

}  // namespace gpulse::query::promql
