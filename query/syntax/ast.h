// The syntax tree of the query language. Nodes own their children through
// std::unique_ptr. ToString() prints canonical text: keywords in upper case,
// identifiers quoted only where needed, parentheses only where precedence
// needs them, so that parse(ToString(parse(q))) is the same tree.
//
// Thread safety: nodes are plain values; a tree nobody mutates may be read
// and run from any number of threads (ParseCache hands one tree to every
// request with the same text). What the executor keeps of a tree between
// runs (its plans) is the executor's, known by the statement's id
// (query/plan/plan_cache.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "query/syntax/token.h"

namespace gpulse::query {

enum class ExprKind : unsigned char {
  kVarRef,    // field or tag: name, var_type
  kWildcard,  // *
  kInteger,   // int_value
  kFloat,     // float_value
  kString,    // text
  kBool,      // bool_value
  kDuration,  // duration
  kRegex,     // text is the pattern
  kCall,      // text is the lower-case function name; children are the arguments
  kUnary,     // unary_op; children[0] is the operand
  kBinary,    // binary_op; children[0] and children[1]
  kIn,        // children[0] IN (children[1..]); negated for NOT IN
};

enum class BinaryOp : unsigned char {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNeq,
  kLt,
  kLte,
  kGt,
  kGte,
  kEqRegex,
  kNeqRegex,
  kAnd,
  kOr,
};

enum class UnaryOp : unsigned char { kNeg, kNot };

// The InfluxQL cast on a reference: "util"::field, "node"::tag.
enum class VarType : unsigned char { kAny, kField, kTag };

// Binding strength, loosest first: OR 1, AND 2, NOT 3, comparisons and IN 4,
// + - 5, * / % 6, unary minus 7, atoms 8. Binary operators associate left.
int Precedence(BinaryOp op);
std::string_view BinaryOpText(BinaryOp op);

struct Expr {
  ExprKind kind = ExprKind::kVarRef;
  Position pos;  // where the expression starts in the text
  std::string text;
  VarType var_type = VarType::kAny;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  bool negated = false;
  std::vector<DurationPart> duration;
  BinaryOp binary_op = BinaryOp::kAdd;
  UnaryOp unary_op = UnaryOp::kNeg;
  std::vector<std::unique_ptr<Expr>> children;
  int height = 1;  // 1 for a leaf; bounded by the parser

  std::string ToString() const;
  // This node's binding strength as printed (see Precedence).
  int PrintPrecedence() const;
};

// `name` bare when it is a plain identifier and no keyword, else "quoted".
std::string QuoteIdent(std::string_view name);
// 'text' with \' \\ \n \t escaped.
std::string QuoteString(std::string_view text);
// 1h30m
std::string DurationToString(const std::vector<DurationPart>& parts);

enum class StatementKind : unsigned char {
  kSelect,
  kShow,
  kExplain,
  kNorthstar,
  kDecompose,
  kDelete,  // DELETE, DROP SERIES, DROP MEASUREMENT: DeleteStatement
  kCreateAlert,
  kCreateSeason,
  kDropDefinition,  // DROP ALERT, DROP SEASON
  kAnomalies,
  kCreateDatabase,
  kRollouts,
};

// A number no other statement of the process has had: what the executor's
// plan cache (query/plan/plan_cache.h) knows a parsed tree by.
uint64_t NextStatementId();

// Sets the function told the id of each SELECT as it is destroyed: the
// executor's plan cache lets that tree's plans go with it. One for the
// process; null (the start) tells no one.
void OnSelectDestroyed(void (*fn)(uint64_t id));

struct Statement {
  explicit Statement(StatementKind k) : kind(k), id(NextStatementId()) {}
  virtual ~Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  virtual std::string ToString() const = 0;

  StatementKind kind;
  Position pos;
  const uint64_t id;  // not part of the tree (ToString, equality)
};

struct SelectStatement;

// db.rp.measurement as InfluxQL writes it (db..m leaves the policy empty), or
// a regex over measurement names.
struct Measurement {
  std::string database;
  std::string retention_policy;
  std::string name;
  std::optional<std::string> regex;

  std::string ToString() const;
};

// One entry of FROM: a measurement or a subquery.
struct Source {
  Measurement measurement;
  std::unique_ptr<SelectStatement> subquery;

  std::string ToString() const;
};

struct SelectField {
  std::unique_ptr<Expr> expr;
  std::string alias;  // empty when there is no AS
};

enum class FillKind : unsigned char { kUnset, kNone, kNull, kPrevious, kLinear, kValue };
enum class SortOrder : unsigned char { kUnset, kAsc, kDesc };

struct SelectStatement : Statement {
  SelectStatement() : Statement(StatementKind::kSelect) {}
  ~SelectStatement() override;
  std::string ToString() const override;

  std::vector<SelectField> fields;
  std::vector<Source> sources;
  std::unique_ptr<Expr> condition;                // WHERE; null when absent
  std::vector<std::unique_ptr<Expr>> dimensions;  // GROUP BY: tags, *, time(...)
  FillKind fill = FillKind::kUnset;
  std::unique_ptr<Expr> fill_value;  // a number literal for FillKind::kValue
  SortOrder order = SortOrder::kUnset;
  std::optional<int64_t> limit, offset, slimit, soffset;
  std::optional<std::string> timezone;  // tz('Europe/Paris')
};

enum class ShowKind : unsigned char {
  kMeasurements,
  kTagKeys,
  kTagValues,
  kFieldKeys,
  kSeries,
  kSeriesCardinality,
  kSources,
  kStale,
  kDatabases,
  kRetentionPolicies,
  kKpis,
  kAlerts,
  kSeasons,
};

// WITH KEY = k, WITH KEY IN (a, b), WITH MEASUREMENT =~ /re/...
struct WithClause {
  TokenKind op = TokenKind::kEq;              // kEq, kNeq, kEqRegex, kNeqRegex or kIn
  std::vector<std::unique_ptr<Expr>> values;  // identifiers or one regex
};

struct ShowStatement : Statement {
  ShowStatement() : Statement(StatementKind::kShow) {}
  std::string ToString() const override;

  ShowKind what = ShowKind::kMeasurements;
  std::string database;                        // SHOW RETENTION POLICIES ON db
  std::optional<WithClause> with_measurement;  // SHOW MEASUREMENTS WITH MEASUREMENT ...
  std::vector<Source> sources;                 // FROM; measurements only
  std::optional<WithClause> with_key;          // SHOW TAG VALUES: required
  std::unique_ptr<Expr> condition;             // WHERE
  std::optional<int64_t> limit, offset;
  std::unique_ptr<Expr> stale_after;  // SHOW STALE 5m; null for the default
};

struct ExplainStatement : Statement {
  ExplainStatement() : Statement(StatementKind::kExplain) {}
  std::string ToString() const override;

  std::unique_ptr<SelectStatement> select;
};

enum class DeleteKind : unsigned char { kDelete, kDropSeries, kDropMeasurement };

// DELETE FROM m [WHERE tags and time] | DELETE WHERE ...: points go, series
// stay. DROP SERIES [FROM m] [WHERE tags]: the series go. DROP MEASUREMENT m:
// every series of m goes.
struct DeleteStatement : Statement {
  DeleteStatement() : Statement(StatementKind::kDelete) {}
  std::string ToString() const override;

  DeleteKind what = DeleteKind::kDelete;
  std::vector<Source> sources;      // measurements or regexes; no subqueries
  std::unique_ptr<Expr> condition;  // WHERE; null when absent
};

// NORTHSTAR [BY tags] [WHERE cond] [OVER window] [EVERY step]: syntax only.
struct NorthstarStatement : Statement {
  NorthstarStatement() : Statement(StatementKind::kNorthstar) {}
  std::string ToString() const override;

  std::vector<std::unique_ptr<Expr>> dimensions;
  std::unique_ptr<Expr> condition;
  std::unique_ptr<Expr> over;
  std::unique_ptr<Expr> every;
  std::unique_ptr<Expr> every_offset;   // EVERY 1d OFFSET 6h; null when none
  std::optional<std::string> timezone;  // tz('Europe/Paris'): EVERY's buckets in that zone
};

// DECOMPOSE NORTHSTAR BETWEEN a AND b VERSUS c AND d [BY tags]: syntax only.
struct DecomposeStatement : Statement {
  DecomposeStatement() : Statement(StatementKind::kDecompose) {}
  std::string ToString() const override;

  std::unique_ptr<Expr> between_start, between_end;
  std::unique_ptr<Expr> versus_start, versus_end;
  std::vector<std::unique_ptr<Expr>> dimensions;
};

// ANOMALIES [BY tags] [WHERE cond] [OVER span]: syntax only (query/fleet/anomalies.h).
struct AnomaliesStatement : Statement {
  AnomaliesStatement() : Statement(StatementKind::kAnomalies) {}
  std::string ToString() const override;

  std::vector<std::unique_ptr<Expr>> dimensions;
  std::unique_ptr<Expr> condition;
  std::unique_ptr<Expr> over;
};

// ROLLOUTS [WHERE cond] [OVER span]: syntax only (query/fleet/rollouts.h).
struct RolloutsStatement : Statement {
  RolloutsStatement() : Statement(StatementKind::kRollouts) {}
  std::string ToString() const override;

  std::unique_ptr<Expr> condition;
  std::unique_ptr<Expr> over;
};

enum class Severity : unsigned char { kPage, kTicket, kInfo };
std::string_view SeverityName(Severity severity);  // "page", "ticket", "info"

// What a firing alert does besides notifying: kDegrade marks the node of
// its group degraded (query/fleet/nodes.h) and asks its webhook to drain
// the node's workloads.
enum class AlertAction : unsigned char { kNone, kDegrade };

// CREATE ALERT name ON source WHEN condition [BASELINE history] [FOR duration]
//   SEVERITY page|ticket|info OWNER team [WEBHOOK 'url'] [ACTION degrade]
// where source is NORTHSTAR ..., ROLLOUTS ..., KPI name [OVER duration], or a SELECT.
// Syntax only; query/fleet/alert_rule.h gives it meaning.
struct CreateAlertStatement : Statement {
  CreateAlertStatement() : Statement(StatementKind::kCreateAlert) {}
  std::string ToString() const override;

  std::string name;
  std::unique_ptr<Statement> source;  // a Northstar, Rollouts or Select statement; null for KPI
  std::string kpi;                    // ON KPI <kpi>
  std::unique_ptr<Expr> kpi_over;     // ON KPI k OVER <duration>; null for the default
  std::unique_ptr<Expr> when;
  std::unique_ptr<Expr> baseline_history;  // null: the default history
  std::unique_ptr<Expr> for_duration;      // null: fires on the first true evaluation
  Severity severity = Severity::kTicket;
  std::string owner;
  std::optional<std::string> webhook;
  AlertAction action = AlertAction::kNone;
};

// CREATE SEASON name FROM start TO end: a known seasonal window (a holiday,
// a launch week) that baselines leave out. Syntax only; query/fleet/calendar.h.
struct CreateSeasonStatement : Statement {
  CreateSeasonStatement() : Statement(StatementKind::kCreateSeason) {}
  std::string ToString() const override;

  std::string name;
  std::unique_ptr<Expr> start, end;  // time bounds, as DECOMPOSE's
};

// DROP ALERT name | DROP SEASON name: a stored definition goes.
enum class DefinitionKind : unsigned char { kAlert, kSeason };
std::string_view DefinitionKindName(DefinitionKind kind);  // "alert", "season"

// CREATE DATABASE name: makes a database known (SHOW DATABASES lists it)
// before anything is written to it, as Telegraf asks at its start. A
// database is the `db` tag of the points written to it (statement_reach.h).
struct CreateDatabaseStatement : Statement {
  CreateDatabaseStatement() : Statement(StatementKind::kCreateDatabase) {}
  std::string ToString() const override;

  std::string name;
};

struct DropDefinitionStatement : Statement {
  DropDefinitionStatement() : Statement(StatementKind::kDropDefinition) {}
  std::string ToString() const override;

  DefinitionKind what = DefinitionKind::kAlert;
  std::string name;
};

// Statements joined by "; ".
std::string QueryToString(const std::vector<std::unique_ptr<Statement>>& statements);

}  // namespace gpulse::query
