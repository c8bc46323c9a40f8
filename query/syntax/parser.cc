#include "query/syntax/parser.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "query/syntax/functions.h"
#include "query/syntax/lexer.h"
#include "query/syntax/time_literal.h"

namespace gpulse::query {
namespace {

constexpr int kNotPrecedence = 3;
constexpr int kComparePrecedence = 4;
constexpr int kAdditivePrecedence = 5;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<BinaryOp> BinaryOpFor(TokenKind kind) {
  switch (kind) {
    case TokenKind::kPlus:
      return BinaryOp::kAdd;
    case TokenKind::kMinus:
      return BinaryOp::kSub;
    case TokenKind::kStar:
      return BinaryOp::kMul;
    case TokenKind::kSlash:
      return BinaryOp::kDiv;
    case TokenKind::kPercent:
      return BinaryOp::kMod;
    case TokenKind::kEq:
      return BinaryOp::kEq;
    case TokenKind::kNeq:
      return BinaryOp::kNeq;
    case TokenKind::kLt:
      return BinaryOp::kLt;
    case TokenKind::kLte:
      return BinaryOp::kLte;
    case TokenKind::kGt:
      return BinaryOp::kGt;
    case TokenKind::kGte:
      return BinaryOp::kGte;
    case TokenKind::kEqRegex:
      return BinaryOp::kEqRegex;
    case TokenKind::kNeqRegex:
      return BinaryOp::kNeqRegex;
    case TokenKind::kAnd:
      return BinaryOp::kAnd;
    case TokenKind::kOr:
      return BinaryOp::kOr;
    default:
      return std::nullopt;
  }
}

bool IsComparison(BinaryOp op) { return Precedence(op) == kComparePrecedence; }

bool IsDuration(const Expr& e) { return e.kind == ExprKind::kDuration; }
bool IsSignedDuration(const Expr& e) {
  return IsDuration(e) ||
         (e.kind == ExprKind::kUnary && e.unary_op == UnaryOp::kNeg && IsDuration(*e.children[0]));
}
bool IsPositiveInteger(const Expr& e) { return e.kind == ExprKind::kInteger && e.int_value > 0; }
bool IsTimeRef(const Expr& e) { return e.kind == ExprKind::kVarRef && Lower(e.text) == "time"; }

std::string ArityText(const FunctionInfo& f) {
  auto plural = [](int n) { return std::to_string(n) + (n == 1 ? " argument" : " arguments"); };
  if (f.max_args < 0) return "at least " + plural(f.min_args);
  if (f.min_args == f.max_args) return plural(f.min_args);
  return std::to_string(f.min_args) + " to " + plural(f.max_args);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  bool Init();
  bool ParseStatements(StatementList* out);
  bool ParseSingleExpression(std::unique_ptr<Expr>* out);
  const ParseError& error() const { return error_; }

 private:
  // Counts one level of nesting for as long as it lives.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) { ++p_->depth_; }
    ~Nest() { --p_->depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    bool ok() const { return p_->depth_ <= kMaxNesting || p_->FailNesting(); }

   private:
    Parser* p_;
  };

  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Consume() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool Accept(TokenKind kind) {
    if (Peek().kind != kind) return false;
    Consume();
    return true;
  }
  bool Expect(TokenKind kind) { return Accept(kind) || Fail(std::string(TokenKindName(kind))); }
  bool PeekWord(std::string_view lower_word, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kIdent && Peek(ahead).text.front() != '"' &&
           Lower(Peek(ahead).value) == lower_word;
  }

  // "expected <expected>, found <the next token>".
  bool Fail(std::string expected) {
    error_ = ParseError{Peek().pos, DescribeToken(Peek()), std::move(expected), ""};
    return false;
  }
  bool FailAt(const Position& pos, std::string found, std::string message) {
    error_ = ParseError{pos, std::move(found), "", std::move(message)};
    return false;
  }
  bool FailNesting() {
    return FailAt(Peek().pos, DescribeToken(Peek()),
                  "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  // Sets the height of a node built from its children and checks the bound.
  bool Finish(Expr* e) {
    e->height = 1;
    for (const auto& c : e->children) e->height = std::max(e->height, c->height + 1);
    if (e->height <= kMaxExprHeight) return true;
    return FailAt(e->pos, "",
                  "expression deeper than " + std::to_string(kMaxExprHeight) + " levels");
  }

  bool ParseStatement(std::unique_ptr<Statement>* out);
  bool ParseSelect(std::unique_ptr<SelectStatement>* out);
  bool ParseSelectTail(SelectStatement* s);
  bool ParseField(SelectField* out);
  bool ParseSources(bool allow_subquery, std::vector<Source>* out);
  bool ParseMeasurement(Measurement* out);
  bool ParseIdent(std::string* out);
  bool ParseDimensions(bool allow_time, std::vector<std::unique_ptr<Expr>>* out);
  bool ParseFill(SelectStatement* s);
  bool ParseInteger(std::optional<int64_t>* out);
  bool ParseDuration(std::unique_ptr<Expr>* out);
  bool ParseCondition(std::unique_ptr<Expr>* out);
  bool ParseShow(std::unique_ptr<Statement>* out);
  bool ParseWith(std::optional<WithClause>* out);
  bool ParseLimitOffset(ShowStatement* s);
  bool ParseExplain(std::unique_ptr<Statement>* out);
  bool ParseDelete(std::unique_ptr<Statement>* out);
  bool ParseDrop(std::unique_ptr<Statement>* out);
  bool ParseNorthstar(std::unique_ptr<Statement>* out);
  bool ParseTimeZone(std::optional<std::string>* out);
  bool ParseDecompose(std::unique_ptr<Statement>* out);
  bool ParseCreateAlert(std::unique_ptr<Statement>* out);
  bool ParseCreateSeason(std::unique_ptr<Statement>* out);
  bool ParseCreateDatabase(std::unique_ptr<Statement>* out);
  bool ParseAnomalies(std::unique_ptr<Statement>* out);
  bool ParseRollouts(std::unique_ptr<Statement>* out);
  bool ExpectWord(std::string_view upper_word);
  bool ParseTimeBound(std::unique_ptr<Expr>* out);

  bool ParseExpr(int min_precedence, std::unique_ptr<Expr>* out);
  bool ParseUnary(std::unique_ptr<Expr>* out);
  bool ParsePrimary(std::unique_ptr<Expr>* out);
  bool ParseIn(std::unique_ptr<Expr>* lhs);
  bool ParseCall(std::unique_ptr<Expr>* out);
  bool ParseArguments(Expr* call);
  bool CheckCall(const Expr& call);
  bool CheckTimeStrings(const Expr& e);
  bool CheckTimeString(const Expr& e);

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_when_ = false;  // parsing an alert rule's WHEN
  ParseError error_;
};

bool Parser::Init() {
  if (text_.size() > kMaxQueryBytes) {
    return FailAt(Position{}, "", "query longer than " + std::to_string(kMaxQueryBytes) + " bytes");
  }
  return Tokenize(text_, &tokens_, &error_);
}

bool Parser::ParseStatements(StatementList* out) {
  while (true) {
    std::unique_ptr<Statement> stmt;
    if (!ParseStatement(&stmt)) return false;
    out->push_back(std::move(stmt));
    if (Accept(TokenKind::kSemicolon)) {
      if (Peek().kind == TokenKind::kEof) return true;
      continue;
    }
    if (Peek().kind == TokenKind::kEof) return true;
    return Fail("; or end of input");
  }
}

bool Parser::ParseSingleExpression(std::unique_ptr<Expr>* out) {
  if (!ParseExpr(1, out) || !CheckTimeStrings(**out)) return false;
  return Peek().kind == TokenKind::kEof || Fail("end of input");
}

bool Parser::ParseStatement(std::unique_ptr<Statement>* out) {
  Position start = Peek().pos;
  bool ok = false;
  switch (Peek().kind) {
    case TokenKind::kSelect: {
      std::unique_ptr<SelectStatement> s;
      ok = ParseSelect(&s);
      *out = std::move(s);
      break;
    }
    case TokenKind::kShow:
      ok = ParseShow(out);
      break;
    case TokenKind::kExplain:
      ok = ParseExplain(out);
      break;
    case TokenKind::kNorthstar:
      ok = ParseNorthstar(out);
      break;
    case TokenKind::kDecompose:
      ok = ParseDecompose(out);
      break;
    case TokenKind::kDelete:
      ok = ParseDelete(out);
      break;
    case TokenKind::kDrop:
      ok = ParseDrop(out);
      break;
    default:
      if (PeekWord("anomalies")) {
        ok = ParseAnomalies(out);
        break;
      }
      if (PeekWord("rollouts")) {
        ok = ParseRollouts(out);
        break;
      }
      if (PeekWord("create") && PeekWord("season", 1)) {
        ok = ParseCreateSeason(out);
        break;
      }
      if (PeekWord("create") && PeekWord("database", 1)) {
        ok = ParseCreateDatabase(out);
        break;
      }
      if (PeekWord("create")) {
        ok = ParseCreateAlert(out);
        break;
      }
      return Fail(
          "SELECT, SHOW, EXPLAIN, DELETE, DROP, CREATE, NORTHSTAR, DECOMPOSE, ANOMALIES or "
          "ROLLOUTS");
  }
  if (ok) (*out)->pos = start;
  return ok;
}

// select = "SELECT" field {"," field} "FROM" sources [where] [group_by] [fill]
//          [order_by] ["LIMIT" int] ["OFFSET" int] ["SLIMIT" int] ["SOFFSET" int] [tz]
bool Parser::ParseSelect(std::unique_ptr<SelectStatement>* out) {
  Nest nest(this);
  if (!nest.ok()) return false;
  auto s = std::make_unique<SelectStatement>();
  s->pos = Peek().pos;
  if (!Expect(TokenKind::kSelect)) return false;
  do {
    s->fields.emplace_back();
    if (!ParseField(&s->fields.back())) return false;
  } while (Accept(TokenKind::kComma));
  if (!Expect(TokenKind::kFrom) || !ParseSources(true, &s->sources)) return false;
  if (!ParseSelectTail(s.get())) return false;
  *out = std::move(s);
  return true;
}

bool Parser::ParseSelectTail(SelectStatement* s) {
  if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  if (Accept(TokenKind::kGroup)) {
    if (!Expect(TokenKind::kBy) || !ParseDimensions(true, &s->dimensions)) return false;
  }
  if (Peek().kind == TokenKind::kFill && !ParseFill(s)) return false;
  if (Accept(TokenKind::kOrder)) {
    if (!Expect(TokenKind::kBy)) return false;
    if (!PeekWord("time")) return Fail("time");
    Consume();
    if (Accept(TokenKind::kAsc)) {
      s->order = SortOrder::kAsc;
    } else if (Accept(TokenKind::kDesc)) {
      s->order = SortOrder::kDesc;
    } else {
      s->order = SortOrder::kAsc;
    }
  }
  if (Accept(TokenKind::kLimit) && !ParseInteger(&s->limit)) return false;
  if (Accept(TokenKind::kOffset) && !ParseInteger(&s->offset)) return false;
  if (Accept(TokenKind::kSlimit) && !ParseInteger(&s->slimit)) return false;
  if (Accept(TokenKind::kSoffset) && !ParseInteger(&s->soffset)) return false;
  return ParseTimeZone(&s->timezone);
}

// ["tz" "(" string ")"]
bool Parser::ParseTimeZone(std::optional<std::string>* out) {
  if (!PeekWord("tz") || Peek(1).kind != TokenKind::kLParen) return true;
  Consume();
  Consume();
  if (Peek().kind != TokenKind::kString || Peek().value.empty()) {
    return Fail("time zone name as a string, such as 'Europe/Paris'");
  }
  *out = Consume().value;
  return Expect(TokenKind::kRParen);
}

bool Parser::ParseField(SelectField* out) {
  if (!ParseExpr(1, &out->expr)) return false;
  if (Accept(TokenKind::kAs)) return ParseIdent(&out->alias);
  return true;
}

bool Parser::ParseIdent(std::string* out) {
  if (Peek().kind != TokenKind::kIdent) return Fail("identifier");
  *out = Consume().value;
  return true;
}

bool Parser::ParseSources(bool allow_subquery, std::vector<Source>* out) {
  do {
    out->emplace_back();
    Source& source = out->back();
    if (allow_subquery && Peek().kind == TokenKind::kLParen) {
      Consume();
      if (Peek().kind != TokenKind::kSelect) return Fail("SELECT");
      if (!ParseSelect(&source.subquery) || !Expect(TokenKind::kRParen)) return false;
    } else if (Peek().kind == TokenKind::kRegex) {
      source.measurement.regex = Consume().value;
    } else if (!ParseMeasurement(&source.measurement)) {
      return false;
    }
  } while (Accept(TokenKind::kComma));
  return true;
}

// measurement = [ident "." [ident] "."] ident | [ident "."] ident
bool Parser::ParseMeasurement(Measurement* out) {
  if (Peek().kind != TokenKind::kIdent) {
    return Fail(Peek().kind == TokenKind::kLParen ? "measurement" : "measurement or (");
  }
  std::vector<std::string> parts{Consume().value};
  while (Accept(TokenKind::kDot)) {
    if (parts.size() == 3) return Fail("measurement (at most database.policy.measurement)");
    if (parts.size() == 1 && Peek().kind == TokenKind::kDot) {
      parts.emplace_back();  // db..m: the default retention policy
      continue;
    }
    if (Peek().kind != TokenKind::kIdent) return Fail("identifier");
    parts.push_back(Consume().value);
  }
  out->name = parts.back();
  if (parts.size() >= 2) out->retention_policy = parts[parts.size() - 2];
  if (parts.size() == 3) out->database = parts[0];
  if (parts.size() == 2 && parts[0].empty()) return Fail("measurement");
  return true;
}

// dimension = "time" "(" duration ["," ["-"] duration] ")" | "*" | ident ["::tag"]
bool Parser::ParseDimensions(bool allow_time, std::vector<std::unique_ptr<Expr>>* out) {
  do {
    const Token& t = Peek();
    if (allow_time && PeekWord("time") && Peek(1).kind == TokenKind::kLParen) {
      auto call = std::make_unique<Expr>();
      call->kind = ExprKind::kCall;
      call->pos = t.pos;
      call->text = "time";
      Consume();
      if (!ParseArguments(call.get())) return false;
      size_t n = call->children.size();
      if (n < 1 || n > 2 || !IsDuration(*call->children[0]) ||
          (n == 2 && !IsSignedDuration(*call->children[1]))) {
        return FailAt(call->pos, "time",
                      "time() takes a bucket duration and an optional offset, such as time(15m) "
                      "or time(1h, 15m)");
      }
      if (!Finish(call.get())) return false;
      out->push_back(std::move(call));
    } else if (t.kind == TokenKind::kStar) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kWildcard;
      e->pos = Consume().pos;
      out->push_back(std::move(e));
    } else if (t.kind == TokenKind::kIdent && Peek(1).kind != TokenKind::kLParen) {
      std::unique_ptr<Expr> e;
      if (!ParsePrimary(&e)) return false;
      out->push_back(std::move(e));
    } else {
      return Fail(allow_time ? "tag key, * or time(...)" : "tag key or *");
    }
  } while (Accept(TokenKind::kComma));
  return true;
}

// fill = "FILL" "(" ("none" | "null" | "previous" | "linear" | ["-"] number) ")"
bool Parser::ParseFill(SelectStatement* s) {
  Consume();
  if (!Expect(TokenKind::kLParen)) return false;
  static constexpr std::pair<std::string_view, FillKind> kFills[] = {
      {"none", FillKind::kNone},
      {"null", FillKind::kNull},
      {"previous", FillKind::kPrevious},
      {"linear", FillKind::kLinear}};
  for (const auto& [word, kind] : kFills) {
    if (PeekWord(word)) {
      Consume();
      s->fill = kind;
      return Expect(TokenKind::kRParen);
    }
  }
  bool negative = Peek().kind == TokenKind::kMinus;
  TokenKind k = Peek(negative ? 1 : 0).kind;
  if (k != TokenKind::kInteger && k != TokenKind::kFloat) {
    return Fail("none, null, previous, linear or a number");
  }
  if (!ParseUnary(&s->fill_value)) return false;
  s->fill = FillKind::kValue;
  return Expect(TokenKind::kRParen);
}

bool Parser::ParseInteger(std::optional<int64_t>* out) {
  if (Peek().kind != TokenKind::kInteger) return Fail("integer");
  std::unique_ptr<Expr> e;
  if (!ParsePrimary(&e)) return false;
  *out = e->int_value;
  return true;
}

bool Parser::ParseDuration(std::unique_ptr<Expr>* out) {
  if (Peek().kind != TokenKind::kDuration) return Fail("duration");
  return ParsePrimary(out);
}

bool Parser::ParseCondition(std::unique_ptr<Expr>* out) {
  return ParseExpr(1, out) && CheckTimeStrings(**out);
}

// show = "SHOW" ( "MEASUREMENTS" [with_measurement] [where] [limit]
//               | "TAG" "KEYS" [from] [where] [limit] | "TAG" "VALUES" [from] with_key [where]
//               [limit] | "FIELD" "KEYS" [from] [limit] | "SERIES" [from] [where] [limit] |
//               "SERIES" "CARDINALITY" [from] [where] | "SOURCES" | "STALE" [duration] [where] |
//               "DATABASES" | "RETENTION" "POLICIES" ["ON" ident] | "KPIS" [where] | "ALERTS" |
//               "SEASONS" )
bool Parser::ParseShow(std::unique_ptr<Statement>* out) {
  auto s = std::make_unique<ShowStatement>();
  Consume();
  static constexpr TokenKind kWhats[] = {
      TokenKind::kMeasurements, TokenKind::kTag,       TokenKind::kField,
      TokenKind::kSeries,       TokenKind::kSources,   TokenKind::kStale,
      TokenKind::kDatabases,    TokenKind::kRetention, TokenKind::kKpis};
  TokenKind what = Peek().kind;
  if (PeekWord("alerts") || PeekWord("seasons")) {
    s->what = PeekWord("alerts") ? ShowKind::kAlerts : ShowKind::kSeasons;
    Consume();
    *out = std::move(s);
    return true;
  }
  if (std::find(std::begin(kWhats), std::end(kWhats), what) == std::end(kWhats)) {
    return Fail(
        "MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES, SOURCES, STALE, DATABASES, "
        "RETENTION POLICIES, KPIS, ALERTS or SEASONS");
  }
  Consume();
  bool from = false, where = false, limit = false;
  switch (what) {
    case TokenKind::kMeasurements:
      s->what = ShowKind::kMeasurements;
      if (Peek().kind == TokenKind::kWith) {
        Consume();
        if (!Expect(TokenKind::kMeasurement) || !ParseWith(&s->with_measurement)) return false;
      }
      where = limit = true;
      break;
    case TokenKind::kTag:
      if (Accept(TokenKind::kKeys)) {
        s->what = ShowKind::kTagKeys;
      } else if (Accept(TokenKind::kValues)) {
        s->what = ShowKind::kTagValues;
      } else {
        return Fail("KEYS or VALUES");
      }
      from = where = limit = true;
      break;
    case TokenKind::kField:
      if (!Expect(TokenKind::kKeys)) return false;
      s->what = ShowKind::kFieldKeys;
      from = limit = true;
      break;
    case TokenKind::kSeries:
      s->what = Accept(TokenKind::kCardinality) ? ShowKind::kSeriesCardinality : ShowKind::kSeries;
      from = where = true;
      limit = s->what == ShowKind::kSeries;
      break;
    case TokenKind::kSources:
      s->what = ShowKind::kSources;
      break;
    case TokenKind::kStale:
      s->what = ShowKind::kStale;
      if (Peek().kind == TokenKind::kDuration && !ParseDuration(&s->stale_after)) return false;
      where = true;
      break;
    case TokenKind::kDatabases:
      s->what = ShowKind::kDatabases;
      break;
    case TokenKind::kKpis:
      s->what = ShowKind::kKpis;
      where = true;
      break;
    case TokenKind::kRetention:
      if (!Expect(TokenKind::kPolicies)) return false;
      s->what = ShowKind::kRetentionPolicies;
      if (Accept(TokenKind::kOn) && !ParseIdent(&s->database)) return false;
      break;
    default:
      break;
  }
  if (from && Accept(TokenKind::kFrom) && !ParseSources(false, &s->sources)) return false;
  if (s->what == ShowKind::kTagValues) {
    if (!Expect(TokenKind::kWith) || !Expect(TokenKind::kKey) || !ParseWith(&s->with_key)) {
      return false;
    }
  }
  if (where && Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  if (limit && !ParseLimitOffset(s.get())) return false;
  *out = std::move(s);
  return true;
}

// with = ("=" | "!=") ident | ("=~" | "!~") regex | "IN" "(" ident {"," ident} ")"
bool Parser::ParseWith(std::optional<WithClause>* out) {
  WithClause with;
  with.op = Peek().kind;
  auto ident = [this](std::vector<std::unique_ptr<Expr>>* values) {
    if (Peek().kind != TokenKind::kIdent) return Fail("identifier");
    values->emplace_back();
    return ParsePrimary(&values->back());
  };
  switch (with.op) {
    case TokenKind::kEq:
    case TokenKind::kNeq:
      Consume();
      if (!ident(&with.values)) return false;
      break;
    case TokenKind::kEqRegex:
    case TokenKind::kNeqRegex:
      Consume();
      if (Peek().kind != TokenKind::kRegex) return Fail("regex");
      with.values.emplace_back();
      if (!ParsePrimary(&with.values.back())) return false;
      break;
    case TokenKind::kIn:
      Consume();
      if (!Expect(TokenKind::kLParen)) return false;
      do {
        if (!ident(&with.values)) return false;
      } while (Accept(TokenKind::kComma));
      if (!Expect(TokenKind::kRParen)) return false;
      break;
    default:
      return Fail("=, !=, =~, !~ or IN");
  }
  *out = std::move(with);
  return true;
}

bool Parser::ParseLimitOffset(ShowStatement* s) {
  if (Accept(TokenKind::kLimit) && !ParseInteger(&s->limit)) return false;
  if (Accept(TokenKind::kOffset) && !ParseInteger(&s->offset)) return false;
  return true;
}

bool Parser::ParseExplain(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<ExplainStatement>();
  if (Peek().kind != TokenKind::kSelect) return Fail("SELECT");
  if (!ParseSelect(&s->select)) return false;
  *out = std::move(s);
  return true;
}

// delete = "DELETE" ( "FROM" sources [where] | where )
bool Parser::ParseDelete(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<DeleteStatement>();
  if (Accept(TokenKind::kFrom)) {
    if (!ParseSources(false, &s->sources)) return false;
    if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  } else {
    // With neither FROM nor WHERE it would empty the database: InfluxQL
    // refuses that too.
    if (!Expect(TokenKind::kWhere) || !ParseCondition(&s->condition)) return false;
  }
  *out = std::move(s);
  return true;
}

// drop = "DROP" ( "SERIES" ( "FROM" sources [where] | where ) | "MEASUREMENT" measurement
//                | "ALERT" ident | "SEASON" ident )
bool Parser::ParseDrop(std::unique_ptr<Statement>* out) {
  Consume();
  if (PeekWord("alert") || PeekWord("season")) {
    auto drop = std::make_unique<DropDefinitionStatement>();
    drop->what = PeekWord("alert") ? DefinitionKind::kAlert : DefinitionKind::kSeason;
    Consume();
    if (!ParseIdent(&drop->name)) return false;
    *out = std::move(drop);
    return true;
  }
  auto s = std::make_unique<DeleteStatement>();
  if (Accept(TokenKind::kMeasurement)) {
    s->what = DeleteKind::kDropMeasurement;
    s->sources.emplace_back();
    if (!ParseMeasurement(&s->sources.back().measurement)) return false;
  } else if (Accept(TokenKind::kSeries)) {
    s->what = DeleteKind::kDropSeries;
    if (Accept(TokenKind::kFrom)) {
      if (!ParseSources(false, &s->sources)) return false;
      if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
    } else if (!Expect(TokenKind::kWhere) || !ParseCondition(&s->condition)) {
      return false;
    }
  } else {
    return Fail("SERIES, MEASUREMENT, ALERT or SEASON");
  }
  *out = std::move(s);
  return true;
}

// northstar = "NORTHSTAR" ["BY" ident {"," ident}] [where] ["OVER" duration]
//             ["EVERY" duration ["OFFSET" duration]] ["tz" "(" string ")"]
bool Parser::ParseNorthstar(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<NorthstarStatement>();
  if (Accept(TokenKind::kBy) && !ParseDimensions(false, &s->dimensions)) return false;
  if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  if (Accept(TokenKind::kOver) && !ParseDuration(&s->over)) return false;
  if (Accept(TokenKind::kEvery)) {
    if (!ParseDuration(&s->every)) return false;
    if (Accept(TokenKind::kOffset) && !ParseDuration(&s->every_offset)) return false;
  }
  if (!ParseTimeZone(&s->timezone)) return false;
  *out = std::move(s);
  return true;
}

// anomalies = "ANOMALIES" ["BY" ident {"," ident}] [where] ["OVER" duration]
bool Parser::ParseAnomalies(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<AnomaliesStatement>();
  if (Accept(TokenKind::kBy) && !ParseDimensions(false, &s->dimensions)) return false;
  if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  if (Accept(TokenKind::kOver) && !ParseDuration(&s->over)) return false;
  *out = std::move(s);
  return true;
}

// rollouts = "ROLLOUTS" [where] ["OVER" duration]
bool Parser::ParseRollouts(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<RolloutsStatement>();
  if (Accept(TokenKind::kWhere) && !ParseCondition(&s->condition)) return false;
  if (Accept(TokenKind::kOver) && !ParseDuration(&s->over)) return false;
  *out = std::move(s);
  return true;
}

// decompose = "DECOMPOSE" "NORTHSTAR" "BETWEEN" time "AND" time "VERSUS" time "AND" time
//             ["BY" ident {"," ident}]
bool Parser::ParseDecompose(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<DecomposeStatement>();
  if (!Expect(TokenKind::kNorthstar) || !Expect(TokenKind::kBetween) ||
      !ParseTimeBound(&s->between_start) || !Expect(TokenKind::kAnd) ||
      !ParseTimeBound(&s->between_end) || !Expect(TokenKind::kVersus) ||
      !ParseTimeBound(&s->versus_start) || !Expect(TokenKind::kAnd) ||
      !ParseTimeBound(&s->versus_end)) {
    return false;
  }
  if (Accept(TokenKind::kBy) && !ParseDimensions(false, &s->dimensions)) return false;
  *out = std::move(s);
  return true;
}

// The words of CREATE ALERT are not reserved (a field may be called
// "owner"); they are recognised only where the grammar expects them.
bool Parser::ExpectWord(std::string_view upper_word) {
  std::string lower(upper_word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!PeekWord(lower)) return Fail(std::string(upper_word));
  Consume();
  return true;
}

// create_alert = "CREATE" "ALERT" ident "ON" source "WHEN" expr ["BASELINE" duration]
//                ["FOR" duration] "SEVERITY" ("page" | "ticket" | "info") "OWNER" ident
//                ["WEBHOOK" string] ["ACTION" "degrade"]
// source = northstar | rollouts | select | "KPI" ident ["OVER" duration]
bool Parser::ParseCreateAlert(std::unique_ptr<Statement>* out) {
  Consume();
  auto s = std::make_unique<CreateAlertStatement>();
  if (!PeekWord("alert")) return Fail("ALERT or SEASON");
  Consume();
  if (!ParseIdent(&s->name) || !Expect(TokenKind::kOn)) return false;
  if (Peek().kind == TokenKind::kNorthstar) {
    if (!ParseNorthstar(&s->source)) return false;
  } else if (Peek().kind == TokenKind::kSelect) {
    std::unique_ptr<SelectStatement> select;
    if (!ParseSelect(&select)) return false;
    s->source = std::move(select);
  } else if (PeekWord("rollouts")) {
    if (!ParseRollouts(&s->source)) return false;
  } else if (PeekWord("kpi")) {
    Consume();
    if (!ParseIdent(&s->kpi)) return false;
    if (Accept(TokenKind::kOver) && !ParseDuration(&s->kpi_over)) return false;
  } else {
    return Fail("NORTHSTAR, ROLLOUTS, SELECT or KPI");
  }
  if (!ExpectWord("WHEN")) return false;
  in_when_ = true;
  const bool when = ParseCondition(&s->when);
  in_when_ = false;
  if (!when) return false;
  if (PeekWord("baseline") && Peek(1).kind != TokenKind::kLParen) {
    Consume();
    if (!ParseDuration(&s->baseline_history)) return false;
  }
  if (PeekWord("for")) {
    Consume();
    if (!ParseDuration(&s->for_duration)) return false;
  }
  if (!ExpectWord("SEVERITY")) return false;
  if (PeekWord("page")) {
    s->severity = Severity::kPage;
  } else if (PeekWord("ticket")) {
    s->severity = Severity::kTicket;
  } else if (PeekWord("info")) {
    s->severity = Severity::kInfo;
  } else {
    return Fail("page, ticket or info");
  }
  Consume();
  if (!ExpectWord("OWNER") || !ParseIdent(&s->owner)) return false;
  if (PeekWord("webhook")) {
    Consume();
    if (Peek().kind != TokenKind::kString) return Fail("the webhook's URL as a 'string'");
    s->webhook = Consume().value;
  }
  if (PeekWord("action")) {
    Consume();
    if (!PeekWord("degrade")) return Fail("degrade (the one action: mark the node degraded)");
    Consume();
    s->action = AlertAction::kDegrade;
  }
  *out = std::move(s);
  return true;
}

// create_season = "CREATE" "SEASON" ident "FROM" bound "TO" bound
bool Parser::ParseCreateSeason(std::unique_ptr<Statement>* out) {
  Consume();
  Consume();
  auto s = std::make_unique<CreateSeasonStatement>();
  if (!ParseIdent(&s->name) || !Expect(TokenKind::kFrom) || !ParseTimeBound(&s->start) ||
      !ExpectWord("TO") || !ParseTimeBound(&s->end)) {
    return false;
  }
  *out = std::move(s);
  return true;
}

// create_database = "CREATE" "DATABASE" ident
// InfluxQL's WITH DURATION, REPLICATION, SHARD DURATION and NAME are refused
// by name: a database's retention is the server's configuration.
bool Parser::ParseCreateDatabase(std::unique_ptr<Statement>* out) {
  Consume();
  Consume();
  auto s = std::make_unique<CreateDatabaseStatement>();
  if (!ParseIdent(&s->name)) return false;
  if (Peek().kind == TokenKind::kWith) {
    return FailAt(Peek().pos, DescribeToken(Peek()),
                  "CREATE DATABASE takes a name only: how long a database keeps its points is "
                  "the server's storage.retention_days_by_database (docs/operations.md), not a "
                  "clause");
  }
  *out = std::move(s);
  return true;
}

// A bound of BETWEEN binds tighter than AND: now() - 48h, '2026-11-01', 1704067200s.
bool Parser::ParseTimeBound(std::unique_ptr<Expr>* out) {
  if (!ParseExpr(kAdditivePrecedence, out)) return false;
  return (*out)->kind != ExprKind::kString || CheckTimeString(**out);
}

// Precedence climbing: operators binding at least as tightly as min_precedence.
bool Parser::ParseExpr(int min_precedence, std::unique_ptr<Expr>* out) {
  std::unique_ptr<Expr> lhs;
  if (!ParseUnary(&lhs)) return false;
  while (true) {
    const Token& t = Peek();
    bool in =
        t.kind == TokenKind::kIn || (t.kind == TokenKind::kNot && Peek(1).kind == TokenKind::kIn);
    if (in && kComparePrecedence >= min_precedence) {
      if (!ParseIn(&lhs)) return false;
      continue;
    }
    std::optional<BinaryOp> op = BinaryOpFor(t.kind);
    if (!op.has_value() || Precedence(*op) < min_precedence) break;
    Consume();
    auto node = std::make_unique<Expr>();
    node->kind = ExprKind::kBinary;
    node->binary_op = *op;
    node->pos = lhs->pos;
    node->children.push_back(std::move(lhs));
    node->children.emplace_back();
    if (!ParseExpr(Precedence(*op) + 1, &node->children.back()) || !Finish(node.get())) {
      return false;
    }
    lhs = std::move(node);
  }
  *out = std::move(lhs);
  return true;
}

// in = expr ["NOT"] "IN" "(" expr {"," expr} ")"
bool Parser::ParseIn(std::unique_ptr<Expr>* lhs) {
  auto node = std::make_unique<Expr>();
  node->kind = ExprKind::kIn;
  node->pos = (*lhs)->pos;
  node->negated = Accept(TokenKind::kNot);
  Consume();
  node->children.push_back(std::move(*lhs));
  Nest nest(this);
  if (!nest.ok() || !Expect(TokenKind::kLParen)) return false;
  do {
    node->children.emplace_back();
    if (!ParseExpr(kAdditivePrecedence, &node->children.back())) return false;
  } while (Accept(TokenKind::kComma));
  if (!Expect(TokenKind::kRParen) || !Finish(node.get())) return false;
  *lhs = std::move(node);
  return true;
}

// unary = "-" unary | "NOT" expr(NOT) | primary. "-" before a number folds into it.
bool Parser::ParseUnary(std::unique_ptr<Expr>* out) {
  TokenKind k = Peek().kind;
  if (k != TokenKind::kMinus && k != TokenKind::kNot) return ParsePrimary(out);
  Nest nest(this);
  if (!nest.ok()) return false;
  auto node = std::make_unique<Expr>();
  node->kind = ExprKind::kUnary;
  node->pos = Consume().pos;
  node->unary_op = k == TokenKind::kNot ? UnaryOp::kNot : UnaryOp::kNeg;
  node->children.emplace_back();
  bool ok = k == TokenKind::kNot ? ParseExpr(kNotPrecedence, &node->children.back())
                                 : ParseUnary(&node->children.back());
  if (!ok) return false;
  Expr& operand = *node->children.back();
  if (k == TokenKind::kMinus && operand.kind == ExprKind::kInteger) {
    operand.int_value = -operand.int_value;
    operand.pos = node->pos;
    *out = std::move(node->children.back());
    return true;
  }
  if (k == TokenKind::kMinus && operand.kind == ExprKind::kFloat) {
    operand.float_value = -operand.float_value;
    operand.pos = node->pos;
    *out = std::move(node->children.back());
    return true;
  }
  if (!Finish(node.get())) return false;
  *out = std::move(node);
  return true;
}

bool Parser::ParsePrimary(std::unique_ptr<Expr>* out) {
  const Token& t = Peek();
  auto e = std::make_unique<Expr>();
  e->pos = t.pos;
  switch (t.kind) {
    case TokenKind::kIdent:
      if (Peek(1).kind == TokenKind::kLParen) return ParseCall(out);
      e->kind = ExprKind::kVarRef;
      e->text = Consume().value;
      if (Accept(TokenKind::kDoubleColon)) {
        if (PeekWord("field")) {
          e->var_type = VarType::kField;
        } else if (PeekWord("tag")) {
          e->var_type = VarType::kTag;
        } else if (Peek().kind == TokenKind::kField) {
          e->var_type = VarType::kField;
        } else if (Peek().kind == TokenKind::kTag) {
          e->var_type = VarType::kTag;
        } else {
          return Fail("field or tag");
        }
        Consume();
      }
      break;
    case TokenKind::kStar:
      Consume();
      e->kind = ExprKind::kWildcard;
      break;
    case TokenKind::kInteger:
      e->kind = ExprKind::kInteger;
      e->int_value = std::stoll(std::string(Consume().text));  // the lexer checked the range
      break;
    case TokenKind::kFloat:
      e->kind = ExprKind::kFloat;
      e->float_value = std::stod(std::string(Consume().text));
      break;
    case TokenKind::kString:
      e->kind = ExprKind::kString;
      e->text = Consume().value;
      break;
    case TokenKind::kRegex:
      e->kind = ExprKind::kRegex;
      e->text = Consume().value;
      break;
    case TokenKind::kDuration:
      e->kind = ExprKind::kDuration;
      e->duration = Consume().duration;
      break;
    case TokenKind::kTrue:
    case TokenKind::kFalse:
      e->kind = ExprKind::kBool;
      e->bool_value = Consume().kind == TokenKind::kTrue;
      break;
    case TokenKind::kLParen: {
      Nest nest(this);
      if (!nest.ok()) return false;
      Consume();
      if (!ParseExpr(1, out)) return false;
      return Expect(TokenKind::kRParen);
    }
    default:
      return Fail("expression");
  }
  *out = std::move(e);
  return true;
}

bool Parser::ParseCall(std::unique_ptr<Expr>* out) {
  const Token& name = Peek();
  auto call = std::make_unique<Expr>();
  call->kind = ExprKind::kCall;
  call->pos = name.pos;
  call->text = Lower(name.value);
  if (call->text == "time" && name.text.front() != '"') {
    return FailAt(name.pos, "time(", "time() is only valid in GROUP BY");
  }
  Consume();
  if (!ParseArguments(call.get()) || !CheckCall(*call) || !Finish(call.get())) return false;
  *out = std::move(call);
  return true;
}

bool Parser::ParseArguments(Expr* call) {
  Nest nest(this);
  if (!nest.ok() || !Expect(TokenKind::kLParen)) return false;
  if (Accept(TokenKind::kRParen)) return true;
  do {
    call->children.emplace_back();
    if (!ParseExpr(1, &call->children.back())) return false;
  } while (Accept(TokenKind::kComma));
  return Expect(TokenKind::kRParen);
}

// Name and arity from the function table, then the arguments that must be
// literals of a given kind.
bool Parser::CheckCall(const Expr& call) {
  const std::string& name = call.text;
  // In an alert rule's WHEN, baseline(x), mad(x), sigma(x) and deviation(x)
  // read x's history (query/fleet/alert_rule.h checks them).
  if (in_when_ && (name == "baseline" || name == "mad" || name == "sigma" || name == "deviation")) {
    return true;
  }
  const FunctionInfo* f = LookupFunction(name);
  if (f == nullptr) return FailAt(call.pos, name, "unknown function " + name + "()");
  int n = static_cast<int>(call.children.size());
  if (n < f->min_args || (f->max_args >= 0 && n > f->max_args)) {
    return FailAt(call.pos, name,
                  name + "() takes " + ArityText(*f) + ", found " + std::to_string(n));
  }
  auto bad = [&](const Expr& arg, const std::string& what) {
    return FailAt(arg.pos, arg.ToString(), name + "() takes " + what);
  };
  const auto& args = call.children;
  if (name == "percentile") {
    const Expr& p = *args[1];
    double v = p.kind == ExprKind::kInteger ? static_cast<double>(p.int_value) : p.float_value;
    bool number = p.kind == ExprKind::kInteger || p.kind == ExprKind::kFloat;
    if (!number || v < 0 || v > 100) return bad(p, "a percentile from 0 to 100 second");
  } else if (name == "top" || name == "bottom") {
    if (!IsPositiveInteger(*args.back())) return bad(*args.back(), "a positive integer count last");
    for (int i = 1; i + 1 < n; ++i) {
      if (args[i]->kind != ExprKind::kVarRef)
        return bad(*args[i], "tag keys between field and count");
    }
  } else if (name == "moving_average" || name == "sample") {
    if (!IsPositiveInteger(*args[1])) return bad(*args[1], "a positive integer window second");
  } else if (name == "baseline") {
    const Expr& agg = *args[0];
    const FunctionInfo* inner = agg.kind == ExprKind::kCall ? LookupFunction(agg.text) : nullptr;
    if (inner == nullptr ||
        (inner->kind != FunctionKind::kAggregate && inner->kind != FunctionKind::kSelector)) {
      return bad(agg, "an aggregate such as mean(util) first");
    }
    if (!IsDuration(*args[1])) return bad(*args[1], "a duration window second, such as 7d");
  } else if (n == 2 && f->kind == FunctionKind::kTransformation && name != "moving_average") {
    if (!IsDuration(*args[1])) return bad(*args[1], "a duration unit second, such as 1s");
  } else if (n == 2 && name == "integral") {
    if (!IsDuration(*args[1])) return bad(*args[1], "a duration unit second, such as 1s");
  }
  return true;
}

// A string compared with `time` must be a time: '2026-11-01T00:00:00Z' or '2026-11-01'.
bool Parser::CheckTimeStrings(const Expr& e) {
  if (e.kind == ExprKind::kBinary && IsComparison(e.binary_op)) {
    const Expr& l = *e.children[0];
    const Expr& r = *e.children[1];
    if (IsTimeRef(l) && r.kind == ExprKind::kString) return CheckTimeString(r);
    if (IsTimeRef(r) && l.kind == ExprKind::kString) return CheckTimeString(l);
  }
  for (const auto& c : e.children) {
    if (!CheckTimeStrings(*c)) return false;
  }
  return true;
}

bool Parser::CheckTimeString(const Expr& e) {
  int64_t nanos = 0;
  if (ParseTimeLiteral(e.text, &nanos)) return true;
  return FailAt(e.pos, QuoteString(e.text),
                "invalid time " + QuoteString(e.text) +
                    ": expected RFC3339 ('2026-11-01T00:00:00Z') or a date ('2026-11-01')");
}

template <typename T>
Result<T> Failed(const ParseError& e, ParseError* out) {
  if (out != nullptr) *out = e;
  return Status::InvalidArgument(e.ToString());
}

}  // namespace

Result<StatementList> ParseQuery(std::string_view text, ParseError* error) {
  Parser p(text);
  StatementList statements;
  if (!p.Init() || !p.ParseStatements(&statements)) return Failed<StatementList>(p.error(), error);
  return statements;
}

Result<std::unique_ptr<Statement>> ParseStatement(std::string_view text, ParseError* error) {
  Result<StatementList> list = ParseQuery(text, error);
  if (!list.ok()) return list.status();
  if (list->size() != 1) {
    ParseError e{list->at(1)->pos, "", "",
                 "expected one statement, found " + std::to_string(list->size())};
    return Failed<std::unique_ptr<Statement>>(e, error);
  }
  return std::move(list->front());
}

Result<std::unique_ptr<Expr>> ParseExpression(std::string_view text, ParseError* error) {
  Parser p(text);
  std::unique_ptr<Expr> expr;
  if (!p.Init() || !p.ParseSingleExpression(&expr)) {
    return Failed<std::unique_ptr<Expr>>(p.error(), error);
  }
  return expr;
}

}  // namespace gpulse::query
