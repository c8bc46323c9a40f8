// Alert rules: what a CREATE ALERT statement means. A rule names a source
// (NORTHSTAR, ROLLOUTS, a KPI or a SELECT), evaluated at an instant into one sample
// per group, and a WHEN condition over each sample's columns; the condition
// may compare an expression of them with its own history: baseline(x),
// mad(x), sigma(x) and deviation(x) are the median, median absolute
// deviation, robust standard deviation and distance in those of x at the
// same instant on earlier days of the same kind, weekday or weekend, with
// planned maintenance and known seasons left out (query/fleet/calendar.h; the
// bare names mean x = value). The state machine that turns true conditions into pending, firing and
// resolved alerts, and the clock that evaluates rules every minute, are the server's
// (server/alerts.h). docs/metric-framework.md gives the reasons.
//
// Thread safety: a compiled rule is immutable; EvaluateAlertRule may run on
// several threads at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"
#include "query/syntax/parser.h"

namespace gpulse::query {

// The definition kind rules are stored under (Db::PutDefinition).
inline constexpr std::string_view kAlertDefinitionKind = "alert";

// The server's built-in rule on SHOW STALE's findings (server/alerts.h): not
// stored, and no stored rule may take its name.
inline constexpr std::string_view kFreshnessRuleName = "collection_contract";

// What a rule reads when its statement does not say: NORTHSTAR, KPI and
// ROLLOUTS sources look back this far from the evaluation instant (a
// rollout is watched for its first hours), and a rule that
// uses the baseline compares with this much history.
inline constexpr std::string_view kDefaultNorthstarOver = "30m";
inline constexpr std::string_view kDefaultKpiOver = "1h";
inline constexpr std::string_view kDefaultRolloutsOver = "6h";
inline constexpr int64_t kDefaultBaselineHistoryNs = 7 * 86400LL * 1'000'000'000;

struct AlertRule {
  std::string name;
  std::string text;  // the canonical CREATE ALERT statement, as stored
  Severity severity = Severity::kTicket;
  std::string owner;
  std::string webhook;                      // empty: none
  AlertAction action = AlertAction::kNone;  // ACTION: what firing does to the group's node
  int64_t for_ns = 0;
  int64_t baseline_history_ns = kDefaultBaselineHistoryNs;
  // WHEN's baseline(x), mad(x), sigma(x) and deviation(x) read the history of
  // these expressions (nullptr: the bare names, for `value`).
  std::vector<const Expr*> baseline_args;  // point into *statement
  bool uses_baseline = false;
  // Whether the bare names baseline, mad, sigma and deviation are the rule's
  // (not when a SELECT's own BASELINE() answers a `deviation` column).
  bool baseline_names = true;
  // A SELECT source: how far back its WHERE reaches from now() (what
  // maintenance and the baseline's history days must keep clear of).
  int64_t select_span_ns = 0;
  std::shared_ptr<const CreateAlertStatement> statement;
  std::shared_ptr<const StatementList> source;  // the NORTHSTAR or SELECT, alone; empty for KPI
};

// Checks a parsed CREATE ALERT and fills in its defaults (NORTHSTAR without a
// range gets OVER 30m, a KPI OVER 1h): InvalidArgument naming the fault and
// its position otherwise. Consumes the statement.
Result<AlertRule> CompileAlertRule(std::unique_ptr<CreateAlertStatement> statement);
// Parses and compiles stored rule text.
Result<AlertRule> CompileAlertRule(std::string_view text);

// One group's answer at one instant.
struct AlertSample {
  std::vector<Tag> group;  // the group's tags, sorted by key; empty for one fleet-wide value
  // What WHEN may name: `value` (NORTHSTAR's goodput, the KPI, or the
  // SELECT's first column) and the source's other columns by name; when
  // WHEN uses the bare names, also `baseline`, `mad`, `sigma` and
  // `deviation` of value (null when no history day had this group).
  std::map<std::string, QueryValue> columns;
  bool active = false;  // WHEN holds
  // True when the group's node was in planned maintenance at the instant:
  // the server does not alert on it.
  bool in_maintenance = false;
  // For a rule that compares with a baseline: the known season the instant
  // lies in, if any (CREATE SEASON): no normal applies, and the server does
  // not alert.
  std::string season;
};

// What a rule's baseline needs of its source's answer at past instants:
// per group, the values of the expressions baseline(x), mad(x)... name
// (NaN where the answer had none). Kept between evaluations, each minute's
// answer is the history of the same minute on the following days, so a
// server evaluating a rule every minute evaluates its source once a minute
// instead of once per history day. An instant's entry is what the source
// answered when it was first asked (as a live server saw it; data that
// arrives later does not change it).
//
// Thread safety: none; one evaluation at a time.
class RuleHistory {
 public:
  struct Point {
    std::vector<Tag> group;
    std::vector<double> args;  // in AlertRule::baseline_args order
  };
  using Instant = std::map<std::string, Point>;  // by GroupText

  const Instant* Find(int64_t t) const;
  // Keeps the answer at `t`, and forgets those before `keep_from`.
  void Keep(int64_t t, Instant instant, int64_t keep_from);
  size_t size() const { return by_instant_.size(); }
  // How many past instants were evaluated because they were not kept.
  uint64_t misses = 0;

 private:
  std::map<int64_t, Instant> by_instant_;
};

// Evaluates `rule` as of `now_ns` (the source sees data up to it; now() in a
// SELECT is now_ns). A WHEN naming a column the source did not produce is an
// error naming it and the columns there are. With `history`, the baseline's
// past instants come from it where kept, and what is evaluated is kept.
// `run` runs the source: the executor's Execute (query/executor.h), handed
// down by the caller because rules sit below the executor that runs them.
using RunStatements = void (*)(Db* db, const StatementList& statements, const QueryOptions& options,
                               QueryResult* out, bool keep_plans);
Status EvaluateAlertRule(Db* db, RunStatements run, const AlertRule& rule,
                         const QueryOptions& options, int64_t now_ns, std::vector<AlertSample>* out,
                         RuleHistory* history = nullptr);

// "region=us-east,node=n1", or "" for the fleet-wide group.
std::string GroupText(const std::vector<Tag>& group);

}  // namespace gpulse::query
