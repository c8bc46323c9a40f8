// Alert rules (alert_rule.h): compiling CREATE ALERT, evaluating a source at
// an instant, the rule's baseline from the source's own history, and WHEN.

#include "query/fleet/alert_rule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "query/fleet/baseline.h"
#include "query/fleet/calendar.h"
#include "query/fleet/kpis.h"
#include "query/fleet/northstar.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"
#include "query/syntax/functions.h"
#include "storage/column.h"

namespace gpulse::query {

namespace {

constexpr int64_t kDayNs = 86400LL * 1'000'000'000;
constexpr int64_t kMaxHistoryNs = 90 * kDayNs;

constexpr size_t kMinHistorySamples = 3;
constexpr std::string_view kBaselineColumns[] = {"baseline", "mad", "sigma", "deviation"};

bool IsBaselineColumn(std::string_view name) {
  return std::find(std::begin(kBaselineColumns), std::end(kBaselineColumns), name) !=
         std::end(kBaselineColumns);
}

// The expressions whose history WHEN asks for (baseline(x), mad(x),
// sigma(x), deviation(x); a bare `baseline` is baseline(value)). The
// columns it names are checked when it is evaluated, against what the
// source answered.
struct WhenNames {
  std::vector<const Expr*> baseline_args;  // nullptr: `value`
  bool bare_baseline = false;
};

// Collects the history `e` asks for and checks that WHEN is a plain expression over
// numbers. `baseline_names`: whether bare baseline, mad, sigma and
// deviation are the rule's (false when a SELECT's own BASELINE() answers
// columns of those names).
Status CollectNames(const Expr& e, bool baseline_names, bool inside_baseline, WhenNames* out) {
  switch (e.kind) {
    case ExprKind::kVarRef:
      if (baseline_names && IsBaselineColumn(e.text)) {
        if (inside_baseline) return ErrorAt(e, e.text + " cannot be taken inside " + e.text + "()");
        out->bare_baseline = true;
      }
      return Status::Ok();
    case ExprKind::kInteger:
    case ExprKind::kFloat:
    case ExprKind::kBool:
      return Status::Ok();
    case ExprKind::kCall: {
      if (IsBaselineColumn(e.text)) {
        if (inside_baseline) return ErrorAt(e, e.text + "() cannot be nested");
        if (e.children.size() != 1) {
          return ErrorAt(e, e.text + "() takes one expression: the value whose history it reads");
        }
        out->baseline_args.push_back(e.children[0].get());
        return CollectNames(*e.children[0], baseline_names, true, out);
      }
      const FunctionInfo* f = LookupFunction(e.text);
      if (f == nullptr || f->kind != FunctionKind::kMath) {
        return ErrorAt(e,
                       "WHEN compares numbers; it may call math functions (abs, round...) and "
                       "baseline(), mad(), sigma(), deviation(), not " +
                           e.text + "()");
      }
      break;
    }
    case ExprKind::kUnary:
    case ExprKind::kBinary:
      if (e.kind == ExprKind::kBinary &&
          (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex)) {
        return ErrorAt(e, "WHEN compares numbers, not patterns");
      }
      break;
    default:
      return ErrorAt(e, "WHEN compares numbers; " + e.ToString() + " is not one");
  }
  for (const auto& c : e.children) {
    GPULSE_RETURN_IF_ERROR(CollectNames(*c, baseline_names, inside_baseline, out));
  }
  return Status::Ok();
}

// The history of one expression for one group: its spread, or nothing when
// no history day had a value.
using Spreads = std::map<std::string, std::optional<RobustSpread>>;  // by the expression's text

std::string ArgText(const Expr* arg) { return arg == nullptr ? "value" : arg->ToString(); }

Result<QueryValue> Eval(const Expr& e, const std::map<std::string, QueryValue>& columns,
                        const Spreads& spreads, bool baseline_names) {
  // baseline(x), mad(x), sigma(x), deviation(x), and the bare names for x = value.
  const bool bare = e.kind == ExprKind::kVarRef && baseline_names && IsBaselineColumn(e.text);
  if (bare || (e.kind == ExprKind::kCall && IsBaselineColumn(e.text))) {
    const Expr* arg = bare ? nullptr : e.children[0].get();
    const auto it = spreads.find(ArgText(arg));
    if (it == spreads.end() || !it->second.has_value()) return QueryValue();
    const RobustSpread& h = *it->second;
    if (e.text == "baseline") return QueryValue(h.median);
    if (e.text == "mad") return QueryValue(h.mad);
    if (e.text == "sigma") return QueryValue(h.sigma);
    const auto now = arg == nullptr ? columns.find("value") : columns.end();
    QueryValue v;
    if (arg == nullptr) {
      if (now != columns.end()) v = now->second;
    } else {
      Result<QueryValue> r = Eval(*arg, columns, spreads, baseline_names);
      if (!r.ok()) return r;
      v = *r;
    }
    double x = 0;
    if (!ToDouble(v, &x)) return QueryValue();
    return QueryValue((x - h.median) / h.sigma);
  }
  switch (e.kind) {
    case ExprKind::kVarRef: {
      const auto it = columns.find(e.text);
      if (it != columns.end()) return it->second;
      std::string known;
      for (const auto& [name, v] : columns) known += (known.empty() ? "" : ", ") + name;
      return ErrorAt(e, "WHEN names " + QuoteIdent(e.text) +
                            ", which the source does not answer; it has " + known);
    }
    case ExprKind::kInteger:
      return QueryValue(e.int_value);
    case ExprKind::kFloat:
      return QueryValue(e.float_value);
    case ExprKind::kBool:
      return QueryValue(e.bool_value);
    case ExprKind::kUnary: {
      Result<QueryValue> v = Eval(*e.children[0], columns, spreads, baseline_names);
      if (!v.ok()) return v;
      if (e.unary_op == UnaryOp::kNot) {
        if (v->index() != 4) return QueryValue();
        return QueryValue(!std::get<bool>(*v));
      }
      return ApplyBinary(BinaryOp::kSub, QueryValue(int64_t{0}), *v);
    }
    case ExprKind::kBinary: {
      Result<QueryValue> a = Eval(*e.children[0], columns, spreads, baseline_names);
      if (!a.ok()) return a;
      Result<QueryValue> b = Eval(*e.children[1], columns, spreads, baseline_names);
      if (!b.ok()) return b;
      // A comparison with a missing value (no history, an empty bucket) is
      // unknown, not false: NOT (deviation < 3) must not fire on it.
      const bool logical = e.binary_op == BinaryOp::kAnd || e.binary_op == BinaryOp::kOr;
      if (!logical && (a->index() == 0 || b->index() == 0)) return QueryValue();
      return ApplyBinary(e.binary_op, *a, *b);
    }
    case ExprKind::kCall: {
      std::vector<QueryValue> args;
      for (const auto& c : e.children) {
        Result<QueryValue> v = Eval(*c, columns, spreads, baseline_names);
        if (!v.ok()) return v;
        args.push_back(std::move(*v));
      }
      return ApplyMath(e.text, args);
    }
    default:
      return ErrorAt(e, "WHEN cannot evaluate " + e.ToString());
  }
}

Result<int64_t> PositiveDuration(const Expr& e, const char* what) {
  const Result<int64_t> v = DurationNanos(e);
  if (!v.ok()) return v.status();
  if (*v <= 0) return ErrorAt(e, std::string(what) + " must be a positive duration");
  return *v;
}

std::unique_ptr<Expr> DurationLiteral(std::string_view text) {
  Result<std::unique_ptr<Expr>> e = ParseExpression(text);
  return std::move(*e);
}

bool HasTimeCondition(const Expr* e) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::kVarRef && e->text == "time") return true;
  return std::any_of(e->children.begin(), e->children.end(),
                     [](const auto& c) { return HasTimeCondition(c.get()); });
}

// One source's answer at one instant: group text -> sample (columns only).
using Answers = std::map<std::string, AlertSample>;

void AddColumns(const ResultSeries& rs, size_t row, AlertSample* sample) {
  for (size_t c = 0; c < rs.columns.size(); ++c) {
    if (rs.columns[c] == "time") continue;
    const QueryValue& v = rs.values[row][c];
    if (!sample->columns.contains("value")) sample->columns["value"] = v;
    sample->columns[rs.columns[c]] = v;
  }
}

// The newest row whose first value column is not null: the source's value
// now (a GROUP BY time answer's last bucket may still be empty).
size_t NewestRow(const ResultSeries& rs) {
  size_t first = 0;
  while (first < rs.columns.size() && rs.columns[first] == "time") ++first;
  for (size_t r = rs.values.size(); r-- > 0;) {
    if (first < rs.values[r].size() && rs.values[r][first].index() != 0) return r;
  }
  return rs.values.size() - 1;
}

class RuleEvaluator {
 public:
  RuleEvaluator(Db* db, RunStatements run, const AlertRule& rule, const QueryOptions& options)
      : db_(db), run_(run), rule_(rule), options_(options) {}

  Status Answer(int64_t now_ns, Answers* out) {
    if (rule_.source == nullptr || rule_.source->empty()) return Kpi(now_ns, out);
    QueryOptions o = options_;
    o.now_ns = now_ns;
    QueryResult result;
    run_(db_, *rule_.source, o, &result, /*keep_plans=*/true);
    const StatementResult& st = result.statements.at(0);
    GPULSE_RETURN_IF_ERROR(st.status);
    for (const ResultSeries& rs : st.series) {
      if (rs.values.empty()) continue;
      std::vector<Tag> group = rs.tags;
      std::sort(group.begin(), group.end(),
                [](const Tag& a, const Tag& b) { return a.key < b.key; });
      AlertSample& sample = (*out)[GroupText(group)];
      sample.group = std::move(group);
      AddColumns(rs, NewestRow(rs), &sample);
    }
    return Status::Ok();
  }

  // How far back a source's answer at t looks (what a history day must
  // keep clear of maintenance).
  int64_t Span() const {
    const Expr* over = nullptr;
    if (rule_.statement->source == nullptr) {
      over = rule_.statement->kpi_over.get();
    } else if (rule_.statement->source->kind == StatementKind::kSelect) {
      return rule_.select_span_ns;
    } else if (rule_.statement->source->kind == StatementKind::kNorthstar) {
      over = static_cast<const NorthstarStatement&>(*rule_.statement->source).over.get();
    } else if (rule_.statement->source->kind == StatementKind::kRollouts) {
      over = static_cast<const RolloutsStatement&>(*rule_.statement->source).over.get();
    }
    if (over == nullptr) return 0;
    const Result<int64_t> v = DurationNanos(*over);
    return v.ok() ? *v : 0;
  }

 private:
  Status Kpi(int64_t now_ns, Answers* out) {
    const int64_t over = Span();
    Result<QueryValue> v =
        EvaluateKpi(db_, rule_.statement->kpi, now_ns - over, now_ns, options_, now_ns);
    if (!v.ok()) return v.status();
    AlertSample& sample = (*out)[""];
    sample.columns["value"] = *v;
    sample.columns[rule_.statement->kpi] = *v;
    return Status::Ok();
  }

  Db* db_;
  RunStatements run_;
  const AlertRule& rule_;
  const QueryOptions& options_;
};

// Whether each of the rule's groups names a node: its source is grouped by
// the node tag (or, a SELECT, by every tag).
bool GroupsByNode(const CreateAlertStatement& s) {
  if (s.source == nullptr) return false;  // a KPI is the fleet's or a region's
  const std::vector<std::unique_ptr<Expr>>* dimensions = nullptr;
  if (s.source->kind == StatementKind::kNorthstar) {
    dimensions = &static_cast<const NorthstarStatement&>(*s.source).dimensions;
  } else if (s.source->kind == StatementKind::kSelect) {
    dimensions = &static_cast<const SelectStatement&>(*s.source).dimensions;
  } else {
    return false;
  }
  return std::any_of(dimensions->begin(), dimensions->end(), [&](const auto& d) {
    const std::string text = d->ToString();
    return text == "node" || text == "\"node\"" ||
           (text == "*" && s.source->kind == StatementKind::kSelect);
  });
}

}  // namespace

std::string GroupText(const std::vector<Tag>& group) {
  // Backslashes before ',', '=' and '\\' inside keys and values, as line
  // protocol writes tags: {a="x,b=y"} and {a="x", b="y"} stay two groups.
  const auto escaped = [](std::string* out, const std::string& text) {
    for (char c : text) {
      if (c == ',' || c == '=' || c == '\\') *out += '\\';
      *out += c;
    }
  };
  std::string out;
  for (const Tag& t : group) {
    if (!out.empty()) out += ',';
    escaped(&out, t.key);
    out += '=';
    escaped(&out, t.value);
  }
  return out;
}

Result<AlertRule> CompileAlertRule(std::unique_ptr<CreateAlertStatement> s) {
  AlertRule rule;
  rule.name = s->name;
  if (s->name == kFreshnessRuleName) {
    return Status::InvalidArgument("alert " + QuoteIdent(s->name) +
                                   ": the name is the built-in freshness rule's");
  }
  rule.severity = s->severity;
  rule.owner = s->owner;
  if (s->owner.empty()) {
    return Status::InvalidArgument("alert " + QuoteIdent(s->name) +
                                   ": OWNER names a team; it is empty");
  }
  if (s->webhook.has_value()) {
    if (!s->webhook->starts_with("http://") && !s->webhook->starts_with("https://")) {
      return Status::InvalidArgument("alert " + QuoteIdent(s->name) + ": the webhook '" +
                                     *s->webhook + "' is not an http:// or https:// URL");
    }
    rule.webhook = *s->webhook;
  }
  rule.action = s->action;
  if (s->action == AlertAction::kDegrade && !GroupsByNode(*s)) {
    return Status::InvalidArgument("alert " + QuoteIdent(s->name) +
                                   ": ACTION degrade marks the node of each alert degraded; the "
                                   "source must group by node (NORTHSTAR ... BY node, or a "
                                   "SELECT ... GROUP BY node)");
  }
  if (s->for_duration != nullptr) {
    const Result<int64_t> v = DurationNanos(*s->for_duration);
    if (!v.ok()) return v.status();
    if (*v < 0) return ErrorAt(*s->for_duration, "FOR must not be negative");
    rule.for_ns = *v;
  }
  if (s->baseline_history != nullptr) {
    Result<int64_t> v = PositiveDuration(*s->baseline_history, "BASELINE");
    if (!v.ok()) return v.status();
    if (*v < kDayNs || *v > kMaxHistoryNs || *v % kDayNs != 0) {
      return ErrorAt(*s->baseline_history,
                     "BASELINE compares with whole days of history, from 1d to 90d");
    }
    rule.baseline_history_ns = *v;
  }
  // A SELECT with its own BASELINE() answers `deviation` itself.
  rule.baseline_names = !(s->source != nullptr && s->source->kind == StatementKind::kSelect &&
                          HasBaseline(static_cast<const SelectStatement&>(*s->source)));
  WhenNames names;
  GPULSE_RETURN_IF_ERROR(CollectNames(*s->when, rule.baseline_names, false, &names));
  if (names.bare_baseline) rule.baseline_args.push_back(nullptr);
  for (const Expr* arg : names.baseline_args) {
    const bool seen = std::any_of(rule.baseline_args.begin(), rule.baseline_args.end(),
                                  [&](const Expr* a) { return ArgText(a) == ArgText(arg); });
    if (!seen) rule.baseline_args.push_back(arg);
  }
  rule.uses_baseline = !rule.baseline_args.empty();
  if (s->baseline_history != nullptr && !rule.uses_baseline) {
    return ErrorAt(*s->baseline_history,
                   "BASELINE sets the history that WHEN's baseline, mad, sigma or deviation "
                   "compare with; WHEN names none of them");
  }
  auto list = std::make_shared<StatementList>();
  if (s->source == nullptr) {
    if (!IsKpi(s->kpi)) {
      return Status::InvalidArgument("alert " + QuoteIdent(s->name) + ": no KPI is called " +
                                     QuoteIdent(s->kpi) + " (SHOW KPIS lists them)");
    }
    if (s->kpi_over == nullptr) s->kpi_over = DurationLiteral(kDefaultKpiOver);
    Result<int64_t> v = PositiveDuration(*s->kpi_over, "OVER");
    if (!v.ok()) return v.status();
  } else if (s->source->kind == StatementKind::kNorthstar) {
    auto& n = static_cast<NorthstarStatement&>(*s->source);
    if (n.over == nullptr && !HasTimeCondition(n.condition.get())) {
      n.over = DurationLiteral(kDefaultNorthstarOver);
    }
    if (n.every != nullptr) {
      return ErrorAt(*n.every,
                     "a rule's NORTHSTAR has one value per group at each evaluation: leave out "
                     "EVERY");
    }
  } else if (s->source->kind == StatementKind::kRollouts) {
    auto& r = static_cast<RolloutsStatement&>(*s->source);
    if (r.over == nullptr && !HasTimeCondition(r.condition.get())) {
      r.over = DurationLiteral(kDefaultRolloutsOver);
    }
  } else if (s->source->kind == StatementKind::kSelect) {
    const auto& select = static_cast<const SelectStatement&>(*s->source);
    // The lower bound must move with now(): a fixed date would make each
    // minute's evaluation read more than the last, without end.
    bool relative = false;
    if (HasTimeCondition(select.condition.get())) {
      constexpr int64_t kProbe = 1'800'000'000LL * 1'000'000'000;  // any instant will do
      TimeRange a, b;
      std::unique_ptr<Expr> rest;
      GPULSE_RETURN_IF_ERROR(ExtractTime(*select.condition, kProbe, &a, &rest));
      GPULSE_RETURN_IF_ERROR(ExtractTime(*select.condition, kProbe + kDayNs, &b, &rest));
      relative = a.has_lo && b.has_lo && b.lo - a.lo == kDayNs && a.lo < kProbe;
      if (relative) rule.select_span_ns = kProbe - a.lo;
    }
    if (!relative) {
      return Status::InvalidArgument(
          "line " + std::to_string(select.pos.line) + ", column " +
          std::to_string(select.pos.column) +
          ": a rule's SELECT must bound time from below relative to now(), such as WHERE time > "
          "now() - 15m: it runs every minute");
    }
  }
  rule.text = s->ToString();
  auto statement = std::shared_ptr<CreateAlertStatement>(std::move(s));
  if (statement->source != nullptr) {
    // The rule keeps its own copy of the source as a statement list the
    // executor runs.
    if (statement->source->kind == StatementKind::kSelect) {
      // A SELECT sees nothing at or after the instant: a rule evaluated
      // for a past instant (its baseline days, a replay) must not see what
      // came later, and the instant's own minute is not complete.
      auto select = CloneSelect(static_cast<const SelectStatement&>(*statement->source));
      auto before_now = MakeBinary(BinaryOp::kLt, MakeVarRef("time"), MakeCall("now", {}));
      before_now->pos = select->condition->pos;
      select->condition =
          MakeBinary(BinaryOp::kAnd, std::move(select->condition), std::move(before_now));
      list->push_back(std::move(select));
    } else if (statement->source->kind == StatementKind::kRollouts) {
      list->push_back(CloneRollouts(static_cast<const RolloutsStatement&>(*statement->source)));
    } else {
      list->push_back(CloneNorthstar(static_cast<const NorthstarStatement&>(*statement->source)));
    }
  }
  rule.source = std::move(list);
  rule.statement = std::move(statement);
  return rule;
}

Result<AlertRule> CompileAlertRule(std::string_view text) {
  Result<std::unique_ptr<Statement>> parsed = ParseStatement(text);
  if (!parsed.ok()) return parsed.status();
  if ((*parsed)->kind != StatementKind::kCreateAlert) {
    return Status::InvalidArgument("not a CREATE ALERT statement: " + std::string(text));
  }
  return CompileAlertRule(
      std::unique_ptr<CreateAlertStatement>(static_cast<CreateAlertStatement*>(parsed->release())));
}

const RuleHistory::Instant* RuleHistory::Find(int64_t t) const {
  const auto it = by_instant_.find(t);
  return it == by_instant_.end() ? nullptr : &it->second;
}

void RuleHistory::Keep(int64_t t, Instant instant, int64_t keep_from) {
  by_instant_[t] = std::move(instant);
  by_instant_.erase(by_instant_.begin(), by_instant_.lower_bound(keep_from));
}

namespace {

// The values of the baseline's arguments in one group's answer.
std::vector<double> ArgValues(const AlertRule& rule,
                              const std::map<std::string, QueryValue>& columns) {
  std::vector<double> out;
  for (const Expr* arg : rule.baseline_args) {
    QueryValue v;
    if (arg == nullptr) {
      const auto it = columns.find("value");
      if (it != columns.end()) v = it->second;
    } else {
      // An answer that lacks a column the expression names is no sample.
      Result<QueryValue> r = Eval(*arg, columns, {}, rule.baseline_names);
      if (r.ok()) v = *r;
    }
    double x = 0;
    out.push_back(ToDouble(v, &x) && std::isfinite(x) ? x
                                                      : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

RuleHistory::Instant HistoryOf(const AlertRule& rule, const Answers& answers) {
  RuleHistory::Instant instant;
  for (const auto& [key, sample] : answers)
    instant[key] = {sample.group, ArgValues(rule, sample.columns)};
  return instant;
}

}  // namespace

Status EvaluateAlertRule(Db* db, RunStatements run, const AlertRule& rule,
                         const QueryOptions& options, int64_t now_ns, std::vector<AlertSample>* out,
                         RuleHistory* kept) {
  out->clear();
  RuleEvaluator evaluator(db, run, rule, options);
  Answers now;
  const Status answered = evaluator.Answer(now_ns, &now);
  if (!answered.ok()) {
    // Positions in the source's error count from the start of its own text.
    const std::string source = rule.statement->source != nullptr
                                   ? rule.statement->source->ToString()
                                   : "KPI " + rule.statement->kpi;
    return answered.WithContext("alert " + QuoteIdent(rule.name) + ", source [" + source + "]");
  }
  const int64_t span = evaluator.Span();
  const int64_t history_days = rule.baseline_history_ns / kDayNs;
  Calendar calendar;
  GPULSE_RETURN_IF_ERROR(calendar.Load(
      db, options.database, now_ns - (rule.uses_baseline ? rule.baseline_history_ns : 0) - span,
      now_ns + 1));
  // History: the same instant on earlier days of the same kind, outside
  // known seasons, each group's answer kept unless planned maintenance
  // touched the group then.
  std::map<std::string, std::vector<std::vector<double>>> history;  // by group: days' arg values
  if (rule.uses_baseline) {
    for (int64_t d = 1; d <= history_days; ++d) {
      const int64_t t = now_ns - d * kDayNs;
      if (WeekendDay(t) != WeekendDay(now_ns) || calendar.SeasonAt(t - span, t) != nullptr) {
        continue;
      }
      const RuleHistory::Instant* found = kept != nullptr ? kept->Find(t) : nullptr;
      RuleHistory::Instant evaluated;
      if (found == nullptr) {
        Answers past;
        GPULSE_RETURN_IF_ERROR(evaluator.Answer(t, &past));
        evaluated = HistoryOf(rule, past);
        found = &evaluated;
        if (kept != nullptr) ++kept->misses;
      }
      for (const auto& [key, point] : *found) {
        if (calendar.GroupInMaintenance(point.group, t - span, t)) continue;
        history[key].push_back(point.args);
      }
      if (kept != nullptr && found == &evaluated) {
        kept->Keep(t, std::move(evaluated), now_ns - rule.baseline_history_ns - kDayNs);
      }
    }
    if (kept != nullptr) {
      kept->Keep(now_ns, HistoryOf(rule, now), now_ns - rule.baseline_history_ns - kDayNs);
    }
  }
  for (auto& [key, sample] : now) {
    sample.in_maintenance = calendar.GroupInMaintenance(sample.group, now_ns - span, now_ns);
    if (rule.uses_baseline) {
      const Season* season = calendar.SeasonAt(now_ns - span, now_ns);
      if (season != nullptr) sample.season = season->name;
    }
    Spreads spreads;
    for (size_t k = 0; k < rule.baseline_args.size(); ++k) {
      const Expr* arg = rule.baseline_args[k];
      std::vector<double> values;
      for (const std::vector<double>& day : history[key]) {
        if (std::isfinite(day[k])) values.push_back(day[k]);
      }
      // Fewer than three days are no normal: a median of one is that day, and
      // its MAD is zero.
      spreads[ArgText(arg)] = values.size() < kMinHistorySamples
                                  ? std::nullopt
                                  : std::optional<RobustSpread>(Spread(std::move(values)));
    }
    if (rule.uses_baseline) {
      // What the bare names give, shown with the alert.
      for (std::string_view name : kBaselineColumns) {
        Expr e;
        e.kind = ExprKind::kVarRef;
        e.text = std::string(name);
        Result<QueryValue> v = Eval(e, sample.columns, spreads, rule.baseline_names);
        if (rule.baseline_names && v.ok() && spreads.contains("value")) {
          sample.columns[e.text] = *v;
        }
      }
    }
    Result<QueryValue> v =
        Eval(*rule.statement->when, sample.columns, spreads, rule.baseline_names);
    if (!v.ok()) return v.status().WithContext("alert " + QuoteIdent(rule.name));
    sample.active = IsTrue(*v);
    out->push_back(std::move(sample));
  }
  return Status::Ok();
}

}  // namespace gpulse::query
