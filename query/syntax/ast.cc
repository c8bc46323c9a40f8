#include "query/syntax/ast.h"

#include <atomic>

#include <charconv>
#include <cmath>

namespace gpulse::query {
namespace {

constexpr int kNotPrecedence = 3;
constexpr int kComparePrecedence = 4;
constexpr int kNegPrecedence = 7;
constexpr int kAtomPrecedence = 8;

void Print(const Expr& e, std::string* out);

// Prints `e`, in parentheses when it binds looser than `min_precedence`.
void PrintOperand(const Expr& e, int min_precedence, std::string* out) {
  bool parens = e.PrintPrecedence() < min_precedence;
  if (parens) *out += '(';
  Print(e, out);
  if (parens) *out += ')';
}

std::string FloatToString(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc() ? ptr : buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void PrintList(const std::vector<std::unique_ptr<Expr>>& list, size_t from, std::string* out) {
  for (size_t i = from; i < list.size(); ++i) {
    if (i > from) *out += ", ";
    Print(*list[i], out);
  }
}

void Print(const Expr& e, std::string* out) {
  switch (e.kind) {
    case ExprKind::kVarRef:
      *out += QuoteIdent(e.text);
      if (e.var_type == VarType::kField) *out += "::field";
      if (e.var_type == VarType::kTag) *out += "::tag";
      break;
    case ExprKind::kWildcard:
      *out += '*';
      break;
    case ExprKind::kInteger:
      *out += std::to_string(e.int_value);
      break;
    case ExprKind::kFloat:
      *out += FloatToString(e.float_value);
      break;
    case ExprKind::kString:
      *out += QuoteString(e.text);
      break;
    case ExprKind::kBool:
      *out += e.bool_value ? "TRUE" : "FALSE";
      break;
    case ExprKind::kDuration:
      *out += DurationToString(e.duration);
      break;
    case ExprKind::kRegex:
      *out += '/';
      for (size_t i = 0; i < e.text.size(); ++i) {
        if (e.text[i] == '/') {
          *out += "\\/";
        } else if (e.text[i] == '\\' && i + 1 < e.text.size()) {
          *out += e.text.substr(i++, 2);
        } else {
          *out += e.text[i];
        }
      }
      *out += '/';
      break;
    case ExprKind::kCall:
      *out += e.text;
      *out += '(';
      PrintList(e.children, 0, out);
      *out += ')';
      break;
    case ExprKind::kUnary:
      if (e.unary_op == UnaryOp::kNot) {
        *out += "NOT ";
        PrintOperand(*e.children[0], kNotPrecedence, out);
      } else {
        *out += '-';
        // "--" would start a comment, so a nested minus gets parentheses.
        const Expr& operand = *e.children[0];
        bool nested_minus = operand.kind == ExprKind::kUnary ||
                            operand.kind == ExprKind::kInteger || operand.kind == ExprKind::kFloat;
        PrintOperand(operand, nested_minus ? kAtomPrecedence + 1 : kNegPrecedence, out);
      }
      break;
    case ExprKind::kBinary: {
      int p = Precedence(e.binary_op);
      PrintOperand(*e.children[0], p, out);
      *out += ' ';
      *out += BinaryOpText(e.binary_op);
      *out += ' ';
      PrintOperand(*e.children[1], p + 1, out);
      break;
    }
    case ExprKind::kIn:
      PrintOperand(*e.children[0], kComparePrecedence + 1, out);
      *out += e.negated ? " NOT IN (" : " IN (";
      // Items are parsed above the comparisons, so `(a = 1)` keeps its parentheses.
      for (size_t i = 1; i < e.children.size(); ++i) {
        if (i > 1) *out += ", ";
        PrintOperand(*e.children[i], kComparePrecedence + 1, out);
      }
      *out += ')';
      break;
  }
}

void AppendDimensions(const std::vector<std::unique_ptr<Expr>>& dims, std::string* out) {
  if (dims.empty()) return;
  *out += " GROUP BY ";
  PrintList(dims, 0, out);
}

void AppendWith(std::string_view what, const WithClause& with, std::string* out) {
  *out += " WITH ";
  *out += what;
  *out += ' ';
  *out += TokenKindName(with.op);
  *out += ' ';
  if (with.op == TokenKind::kIn) {
    *out += '(';
    PrintList(with.values, 0, out);
    *out += ')';
  } else {
    Print(*with.values[0], out);
  }
}

void AppendSources(const std::vector<Source>& sources, std::string* out) {
  if (sources.empty()) return;
  *out += " FROM ";
  for (size_t i = 0; i < sources.size(); ++i) {
    if (i > 0) *out += ", ";
    *out += sources[i].ToString();
  }
}

void AppendCondition(const std::unique_ptr<Expr>& cond, std::string* out) {
  if (cond == nullptr) return;
  *out += " WHERE ";
  Print(*cond, out);
}

void AppendNumber(std::string_view keyword, const std::optional<int64_t>& n, std::string* out) {
  if (!n.has_value()) return;
  *out += ' ';
  *out += keyword;
  *out += ' ';
  *out += std::to_string(*n);
}

}  // namespace

uint64_t NextStatementId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {
std::atomic<void (*)(uint64_t)> select_destroyed{nullptr};
}  // namespace

void OnSelectDestroyed(void (*fn)(uint64_t id)) { select_destroyed.store(fn); }

SelectStatement::~SelectStatement() {
  if (void (*fn)(uint64_t) = select_destroyed.load(std::memory_order_relaxed)) fn(id);
}

int Precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::kOr:
      return 1;
    case BinaryOp::kAnd:
      return 2;
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
      return 5;
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kMod:
      return 6;
    default:
      return kComparePrecedence;
  }
}

std::string_view BinaryOpText(BinaryOp op) {
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
    case BinaryOp::kEq:
      return "=";
    case BinaryOp::kNeq:
      return "!=";
    case BinaryOp::kLt:
      return "<";
    case BinaryOp::kLte:
      return "<=";
    case BinaryOp::kGt:
      return ">";
    case BinaryOp::kGte:
      return ">=";
    case BinaryOp::kEqRegex:
      return "=~";
    case BinaryOp::kNeqRegex:
      return "!~";
    case BinaryOp::kAnd:
      return "AND";
    case BinaryOp::kOr:
      return "OR";
  }
  return "?";
}

int Expr::PrintPrecedence() const {
  switch (kind) {
    case ExprKind::kBinary:
      return Precedence(binary_op);
    case ExprKind::kIn:
      return kComparePrecedence;
    case ExprKind::kUnary:
      return unary_op == UnaryOp::kNot ? kNotPrecedence : kNegPrecedence;
    case ExprKind::kInteger:
      return int_value < 0 ? kNegPrecedence : kAtomPrecedence;
    case ExprKind::kFloat:
      return std::signbit(float_value) ? kNegPrecedence : kAtomPrecedence;
    default:
      return kAtomPrecedence;
  }
}

std::string Expr::ToString() const {
  std::string out;
  Print(*this, &out);
  return out;
}

std::string QuoteIdent(std::string_view name) {
  bool bare = !name.empty() && !(name[0] >= '0' && name[0] <= '9') && !LookupKeyword(name);
  for (char c : name) {
    bool word =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    bare = bare && word;
  }
  if (bare) return std::string(name);
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string QuoteString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string DurationToString(const std::vector<DurationPart>& parts) {
  std::string out;
  for (const DurationPart& p : parts) out += std::to_string(p.amount) + p.unit;
  return out;
}

std::string Measurement::ToString() const {
  if (regex.has_value()) {
    Expr e;
    e.kind = ExprKind::kRegex;
    e.text = *regex;
    return e.ToString();
  }
  std::string out;
  if (!database.empty()) out += QuoteIdent(database) + ".";
  if (!database.empty() || !retention_policy.empty()) {
    if (!retention_policy.empty()) out += QuoteIdent(retention_policy);
    out += ".";
  }
  return out + QuoteIdent(name);
}

std::string Source::ToString() const {
  if (subquery != nullptr) return "(" + subquery->ToString() + ")";
  return measurement.ToString();
}

std::string SelectStatement::ToString() const {
  std::string out = "SELECT ";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ", ";
    Print(*fields[i].expr, &out);
    if (!fields[i].alias.empty()) out += " AS " + QuoteIdent(fields[i].alias);
  }
  AppendSources(sources, &out);
  AppendCondition(condition, &out);
  AppendDimensions(dimensions, &out);
  switch (fill) {
    case FillKind::kUnset:
      break;
    case FillKind::kNone:
      out += " FILL(none)";
      break;
    case FillKind::kNull:
      out += " FILL(null)";
      break;
    case FillKind::kPrevious:
      out += " FILL(previous)";
      break;
    case FillKind::kLinear:
      out += " FILL(linear)";
      break;
    case FillKind::kValue:
      out += " FILL(" + fill_value->ToString() + ")";
      break;
  }
  if (order != SortOrder::kUnset) {
    out += order == SortOrder::kAsc ? " ORDER BY time ASC" : " ORDER BY time DESC";
  }
  AppendNumber("LIMIT", limit, &out);
  AppendNumber("OFFSET", offset, &out);
  AppendNumber("SLIMIT", slimit, &out);
  AppendNumber("SOFFSET", soffset, &out);
  if (timezone.has_value()) out += " tz(" + QuoteString(*timezone) + ")";
  return out;
}

std::string ShowStatement::ToString() const {
  static constexpr std::string_view kWhat[] = {
      "MEASUREMENTS", "TAG KEYS",           "TAG VALUES", "FIELD KEYS",
      "SERIES",       "SERIES CARDINALITY", "SOURCES",    "STALE",
      "DATABASES",    "RETENTION POLICIES", "KPIS",       "ALERTS",
      "SEASONS"};
  std::string out = "SHOW ";
  out += kWhat[static_cast<int>(what)];
  if (!database.empty()) out += " ON " + QuoteIdent(database);
  if (with_measurement.has_value()) AppendWith("MEASUREMENT", *with_measurement, &out);
  AppendSources(sources, &out);
  if (with_key.has_value()) AppendWith("KEY", *with_key, &out);
  if (stale_after != nullptr) out += " " + stale_after->ToString();
  AppendCondition(condition, &out);
  AppendNumber("LIMIT", limit, &out);
  AppendNumber("OFFSET", offset, &out);
  return out;
}

std::string DeleteStatement::ToString() const {
  std::string out;
  switch (what) {
    case DeleteKind::kDelete:
      out = "DELETE";
      break;
    case DeleteKind::kDropSeries:
      out = "DROP SERIES";
      break;
    case DeleteKind::kDropMeasurement:
      return "DROP MEASUREMENT " + sources.at(0).ToString();
  }
  AppendSources(sources, &out);
  AppendCondition(condition, &out);
  return out;
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kPage:
      return "page";
    case Severity::kTicket:
      return "ticket";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

std::string CreateAlertStatement::ToString() const {
  std::string out = "CREATE ALERT " + QuoteIdent(name) + " ON ";
  if (source != nullptr) {
    out += source->ToString();
  } else {
    out += "KPI " + QuoteIdent(kpi);
    if (kpi_over != nullptr) out += " OVER " + kpi_over->ToString();
  }
  out += " WHEN " + when->ToString();
  if (baseline_history != nullptr) out += " BASELINE " + baseline_history->ToString();
  if (for_duration != nullptr) out += " FOR " + for_duration->ToString();
  out += " SEVERITY ";
  out += SeverityName(severity);
  out += " OWNER " + QuoteIdent(owner);
  if (webhook.has_value()) out += " WEBHOOK " + QuoteString(*webhook);
  if (action == AlertAction::kDegrade) out += " ACTION degrade";
  return out;
}

std::string CreateSeasonStatement::ToString() const {
  std::string out = "CREATE SEASON " + QuoteIdent(name) + " FROM ";
  PrintOperand(*start, kComparePrecedence + 1, &out);
  out += " TO ";
  PrintOperand(*end, kComparePrecedence + 1, &out);
  return out;
}

std::string_view DefinitionKindName(DefinitionKind kind) {
  return kind == DefinitionKind::kAlert ? "alert" : "season";
}

std::string DropDefinitionStatement::ToString() const {
  return std::string(what == DefinitionKind::kAlert ? "DROP ALERT " : "DROP SEASON ") +
         QuoteIdent(name);
}

std::string CreateDatabaseStatement::ToString() const {
  return "CREATE DATABASE " + QuoteIdent(name);
}

std::string ExplainStatement::ToString() const { return "EXPLAIN " + select->ToString(); }

std::string NorthstarStatement::ToString() const {
  std::string out = "NORTHSTAR";
  if (!dimensions.empty()) {
    out += " BY ";
    PrintList(dimensions, 0, &out);
  }
  AppendCondition(condition, &out);
  if (over != nullptr) out += " OVER " + over->ToString();
  if (every != nullptr) out += " EVERY " + every->ToString();
  if (every_offset != nullptr) out += " OFFSET " + every_offset->ToString();
  if (timezone.has_value()) out += " tz(" + QuoteString(*timezone) + ")";
  return out;
}

std::string AnomaliesStatement::ToString() const {
  std::string out = "ANOMALIES";
  if (!dimensions.empty()) {
    out += " BY ";
    PrintList(dimensions, 0, &out);
  }
  AppendCondition(condition, &out);
  if (over != nullptr) out += " OVER " + over->ToString();
  return out;
}

std::string RolloutsStatement::ToString() const {
  std::string out = "ROLLOUTS";
  AppendCondition(condition, &out);
  if (over != nullptr) out += " OVER " + over->ToString();
  return out;
}

std::string DecomposeStatement::ToString() const {
  std::string out = "DECOMPOSE NORTHSTAR BETWEEN ";
  // The bounds are parsed above AND's precedence, so comparisons need parens.
  PrintOperand(*between_start, kComparePrecedence + 1, &out);
  out += " AND ";
  PrintOperand(*between_end, kComparePrecedence + 1, &out);
  out += " VERSUS ";
  PrintOperand(*versus_start, kComparePrecedence + 1, &out);
  out += " AND ";
  PrintOperand(*versus_end, kComparePrecedence + 1, &out);
  if (!dimensions.empty()) {
    out += " BY ";
    PrintList(dimensions, 0, &out);
  }
  return out;
}

std::string QueryToString(const std::vector<std::unique_ptr<Statement>>& statements) {
  std::string out;
  for (size_t i = 0; i < statements.size(); ++i) {
    if (i > 0) out += "; ";
    out += statements[i]->ToString();
  }
  return out;
}

}  // namespace gpulse::query
