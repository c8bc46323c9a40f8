#include "query/executor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "query/exec/delete.h"
#include "query/exec/select.h"
#include "query/fleet/alert_rule.h"
#include "query/fleet/anomalies.h"
#include "query/fleet/baseline.h"
#include "query/fleet/calendar.h"
#include "query/fleet/decompose.h"
#include "query/fleet/kpis.h"
#include "query/fleet/ledger_days.h"
#include "query/fleet/northstar.h"
#include "query/fleet/rollouts.h"
#include "query/fleet/stale.h"
#include "query/plan/condition.h"
#include "query/plan/plan_cache.h"
#include "query/promeval/statement.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/runtime/inputs.h"
#include "query/runtime/query_memory.h"
#include "query/syntax/regex.h"
#include "query/syntax/statement_reach.h"

namespace gpulse {

Status Query(Db* db, std::string_view text, const QueryOptions& options, QueryResult* out) {
  if (query::promeval::IsPromQLStatement(text)) {
    query::promeval::RunPromQLStatement(db, text, options, &out->statements.emplace_back());
    return Status::Ok();
  }
  query::ParseError error;
  Result<query::StatementList> statements = query::ParseQuery(text, &error);
  if (!statements.ok()) return statements.status();
  query::Execute(db, *statements, options, out, /*keep_plans=*/false);  // the tree dies here
  return Status::Ok();
}

QueryCacheStats GetQueryCacheStats() {
  QueryCacheStats stats;
  stats.kept_plan_series = query::KeptPlanSeries();
  const query::LedgerDays& ledger = query::LedgerDays::Process();
  stats.ledger_kept_bytes = ledger.bytes();
  stats.ledger_spans_reused = ledger.reused();
  stats.ledger_spans_built = ledger.built();
  return stats;
}

namespace query {

namespace {

// The plans SELECTs keep between runs (plan_cache.h), known by the tree's
// statement id: a tree is run against the Db of whoever parsed it (the
// server's ParseCache is its Db's), as when the plans sat in the tree.
PlanCache& ExecutorPlans() {
  // Never destroyed: threads may run at exit. Told of each tree's end.
  static PlanCache* const plans = [] {
    auto* cache = new PlanCache();
    OnSelectDestroyed([](uint64_t id) { ExecutorPlans().Forget(id); });
    return cache;
  }();
  return *plans;
}

// The definition kind CREATE DATABASE stores its names under.
constexpr std::string_view kDatabaseDefinitionKind = "database";

// A WITH clause with its regex compiled once; no clause matches every name.
class WithMatcher {
 public:
  Status Compile(const std::optional<WithClause>& with) {
    with_ = with ? &*with : nullptr;
    if (!with_ || (with_->op != TokenKind::kEqRegex && with_->op != TokenKind::kNeqRegex)) {
      return Status::Ok();
    }
    Result<Regex> re = CompileRegex(with_->values[0]->text);
    if (!re.ok()) return ErrorAt(*with_->values[0], re.status().message());
    re_ = std::move(*re);
    return Status::Ok();
  }

  bool Matches(const std::string& name) const {
    if (!with_) return true;
    switch (with_->op) {
      case TokenKind::kEq:
        return name == with_->values[0]->text;
      case TokenKind::kNeq:
        return name != with_->values[0]->text;
      case TokenKind::kIn:
        return std::any_of(with_->values.begin(), with_->values.end(),
                           [&](const auto& v) { return v->text == name; });
      case TokenKind::kEqRegex:
      case TokenKind::kNeqRegex:
        return RegexSearch(*re_, name) == (with_->op == TokenKind::kEqRegex);
      default:
        return false;
    }
  }

 private:
  const WithClause* with_ = nullptr;
  Regex re_;
};

class ShowRunner {
 public:
  ShowRunner(Db* db, const QueryOptions& options, int64_t now)
      : db_(db), options_(options), now_(now) {}

  Status Run(const ShowStatement& s, std::vector<ResultSeries>* out) {
    GPULSE_RETURN_IF_ERROR(cond_.Compile(s.condition.get()));
    switch (s.what) {
      case ShowKind::kDatabases:
        return Databases(out);
      case ShowKind::kRetentionPolicies:
        return RetentionPolicies(s, out);
      case ShowKind::kSources:
        if (!options_.show_sources) {
          return Status::InvalidArgument(
              "SHOW SOURCES lists what gpulse serve scrapes and who pushes to it; ask the server");
        }
        out->emplace_back();
        options_.show_sources(&out->back());
        return Status::Ok();
      case ShowKind::kStale:
        return RunShowStale(db_, s, options_, now_, out);
      case ShowKind::kKpis:
        return RunShowKpis(db_, s, options_, now_, out);
      case ShowKind::kAlerts:
        return ShowAlerts(out);
      case ShowKind::kSeasons:
        return ShowSeasons(out);
      default:
        break;
    }
    std::vector<std::string> measurements;
    GPULSE_RETURN_IF_ERROR(Measurements(s, &measurements));
    switch (s.what) {
      case ShowKind::kMeasurements: {
        ResultSeries rs;
        rs.name = "measurements";
        rs.columns = {"name"};
        for (const std::string& m : measurements) rs.values.push_back({m});
        Limit(s, &rs);
        if (!rs.values.empty()) out->push_back(std::move(rs));
        return Status::Ok();
      }
      case ShowKind::kTagKeys:
        for (const std::string& m : measurements) {
          std::set<std::string> keys;
          if (!s.condition) {
            std::vector<std::string> indexed;
            GPULSE_RETURN_IF_ERROR(IndexedTagKeys(m, &indexed));
            keys.insert(indexed.begin(), indexed.end());
          } else {
            std::vector<Series> series;
            GPULSE_RETURN_IF_ERROR(Series_(m, &series));
            for (const Series& x : series) {
              for (const Tag& t : x.tags) keys.insert(t.key);
            }
          }
          ResultSeries rs;
          rs.name = m;
          rs.columns = {"tagKey"};
          for (const std::string& k : keys) rs.values.push_back({k});
          Limit(s, &rs);
          if (!rs.values.empty()) out->push_back(std::move(rs));
        }
        return Status::Ok();
      case ShowKind::kTagValues: {
        WithMatcher with_key;
        GPULSE_RETURN_IF_ERROR(with_key.Compile(s.with_key));
        for (const std::string& m : measurements) {
          std::set<std::pair<std::string, std::string>> pairs;
          if (!s.condition) {
            std::vector<std::string> keys;
            GPULSE_RETURN_IF_ERROR(IndexedTagKeys(m, &keys));
            for (const std::string& key : keys) {
              if (!with_key.Matches(key)) continue;
              std::vector<std::string> values;
              GPULSE_RETURN_IF_ERROR(db_->ListTagValues(m, key, Scope(), &values));
              for (std::string& v : values) pairs.insert({key, std::move(v)});
            }
          } else {
            std::vector<Series> series;
            GPULSE_RETURN_IF_ERROR(Series_(m, &series));
            for (const Series& x : series) {
              for (const Tag& t : x.tags) {
                if (with_key.Matches(t.key)) pairs.insert({t.key, t.value});
              }
            }
          }
          ResultSeries rs;
          rs.name = m;
          rs.columns = {"key", "value"};
          for (const auto& [k, v] : pairs) rs.values.push_back({k, v});
          Limit(s, &rs);
          if (!rs.values.empty()) out->push_back(std::move(rs));
        }
        return Status::Ok();
      }
      case ShowKind::kFieldKeys:
        for (const std::string& m : measurements) {
          std::vector<FieldInfo> fields;
          GPULSE_RETURN_IF_ERROR(db_->ListFields(m, &fields));
          std::erase_if(fields, [](const FieldInfo& f) { return IsStaleField(f.name); });
          ResultSeries rs;
          rs.name = m;
          rs.columns = {"fieldKey", "fieldType"};
          for (const FieldInfo& f : fields) {
            rs.values.push_back({f.name, std::string(storage::FieldTypeName(f.type))});
          }
          Limit(s, &rs);
          if (!rs.values.empty()) out->push_back(std::move(rs));
        }
        return Status::Ok();
      case ShowKind::kSeries:
      case ShowKind::kSeriesCardinality: {
        ResultSeries rs;
        rs.columns = {s.what == ShowKind::kSeries ? "key" : "count"};
        int64_t count = 0;
        for (const std::string& m : measurements) {
          if (s.what == ShowKind::kSeriesCardinality && !s.condition) {
            uint64_t n = 0;
            GPULSE_RETURN_IF_ERROR(db_->CountSeries(m, Scope(), &n));
            count += static_cast<int64_t>(n);
            continue;
          }
          std::vector<Series> series;
          GPULSE_RETURN_IF_ERROR(Series_(m, &series));
          for (const Series& x : series) {
            ++count;
            if (s.what != ShowKind::kSeries) continue;
            std::string key = x.measurement;
            for (const Tag& t : x.tags) key += "," + t.key + "=" + t.value;
            rs.values.push_back({key});
          }
        }
        if (s.what == ShowKind::kSeries) {
          std::sort(rs.values.begin(), rs.values.end());
        } else {
          rs.values.push_back({count});
        }
        Limit(s, &rs);
        if (!rs.values.empty()) out->push_back(std::move(rs));
        return Status::Ok();
      }
      default:
        return Status::InvalidArgument("this SHOW is not available yet");
    }
  }

 private:
  Status Databases(std::vector<ResultSeries>* out) {
    std::vector<std::string> measurements;
    GPULSE_RETURN_IF_ERROR(db_->ListMeasurements(&measurements));
    std::set<std::string> names;
    for (const std::string& m : measurements) {
      std::vector<std::string> values;
      GPULSE_RETURN_IF_ERROR(db_->ListTagValues(m, "db", &values));
      names.insert(values.begin(), values.end());
    }
    // And those CREATE DATABASE made known before anything was written.
    std::vector<std::pair<std::string, std::string>> created;
    GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kDatabaseDefinitionKind, &created));
    for (const auto& [name, text] : created) names.insert(name);
    ResultSeries rs;
    rs.name = "databases";
    rs.columns = {"name"};
    for (const std::string& n : names) {
      if (MayRead(options_, n)) rs.values.push_back({n});
    }
    out->push_back(std::move(rs));
    return Status::Ok();
  }

  // One policy per kind of data, with the retention set for it (for the
  // database ON names, or the query's): "autogen" (the default, what
  // clients write to and read from; its duration is the raw points'), "raw"
  // and each kept tier, which FROM "<policy>".m reads.
  Status RetentionPolicies(const ShowStatement& s, std::vector<ResultSeries>* out) {
    const std::string& database = s.database.empty() ? options_.database : s.database;
    const auto duration = [&](int tier) {
      // RetainedSince at time 0 is minus the retention.
      const int64_t since = db_->RetainedSince(tier, 0, database);
      return std::string(since == INT64_MIN ? "0s" : InfluxDuration(-since));
    };
    ResultSeries rs;
    rs.columns = {"name", "duration", "shardGroupDuration", "replicaN", "default"};
    const std::string raw = duration(-1);
    rs.values.push_back({std::string("autogen"), raw, std::string("24h0m0s"), int64_t{1}, true});
    rs.values.push_back({std::string("raw"), raw, std::string("24h0m0s"), int64_t{1}, false});
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (!(db_->KeptTiers() & (1u << t))) continue;
      rs.values.push_back({std::string(storage::kTiers[t].name), duration(static_cast<int>(t)),
                           std::string("24h0m0s"), int64_t{1}, false});
    }
    out->push_back(std::move(rs));
    return Status::Ok();
  }

  // 720h0m0s, as InfluxDB writes a policy's duration.
  static std::string InfluxDuration(int64_t ns) {
    const int64_t s = ns / 1'000'000'000;
    return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m" +
           std::to_string(s % 60) + "s";
  }

  // The measurements the statement covers: FROM, WITH MEASUREMENT, the
  // database scope.
  Status Measurements(const ShowStatement& s, std::vector<std::string>* out) {
    std::vector<std::string> all;
    if (options_.database.empty()) {
      GPULSE_RETURN_IF_ERROR(db_->ListMeasurements(&all));
    } else {
      std::vector<std::string> every;
      GPULSE_RETURN_IF_ERROR(db_->ListMeasurements(&every));
      for (std::string& m : every) {
        uint64_t n = 0;
        GPULSE_RETURN_IF_ERROR(db_->CountSeries(m, Scope(), &n));
        if (n > 0) all.push_back(std::move(m));
      }
    }
    SourceFilter from;
    GPULSE_RETURN_IF_ERROR(from.Compile(s.sources));
    WithMatcher with;
    GPULSE_RETURN_IF_ERROR(with.Compile(s.with_measurement));
    for (const std::string& m : all) {
      if (!from.Names(m) || !with.Matches(m)) continue;
      if (s.condition) {
        std::vector<Series> series;
        GPULSE_RETURN_IF_ERROR(Series_(m, &series));
        if (series.empty()) continue;
      }
      out->push_back(m);
    }
    return Status::Ok();
  }

  // The query's database as tag matchers (none without one).
  std::vector<TagMatcher> Scope() const {
    if (options_.database.empty()) return {};
    return {{"db", options_.database}};
  }

  // The tag keys of the measurement's series under the database scope,
  // from the tag index, `db` hidden under a scope (as Series_ hides it).
  Status IndexedTagKeys(const std::string& m, std::vector<std::string>* out) {
    GPULSE_RETURN_IF_ERROR(db_->ListTagKeys(m, Scope(), out));
    if (!options_.database.empty()) std::erase(*out, std::string("db"));
    return Status::Ok();
  }

  // The measurement's series under the database scope and WHERE, with the
  // `db` tag hidden under a scope.
  Status Series_(const std::string& m, std::vector<Series>* out) {
    std::vector<TagMatcher> matchers;
    if (!options_.database.empty()) matchers.push_back({"db", options_.database});
    std::vector<Series> series;
    GPULSE_RETURN_IF_ERROR(db_->ListSeries(m, matchers, &series));
    for (Series& x : series) {
      if (!options_.database.empty()) {
        std::erase_if(x.tags, [](const Tag& t) { return t.key == "db"; });
      }
      if (cond_.Matches(x.tags)) out->push_back(std::move(x));
    }
    return Status::Ok();
  }

  Status ShowAlerts(std::vector<ResultSeries>* out) {
    out->emplace_back();
    ResultSeries& rs = out->back();
    if (options_.show_alerts) {
      options_.show_alerts(&rs);
      return Status::Ok();
    }
    std::vector<std::pair<std::string, std::string>> rules;
    GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kAlertDefinitionKind, &rules));
    rs.name = "alerts";
    rs.columns = {"name", "severity", "owner", "state", "definition"};
    for (auto& [name, text] : rules) {
      const Result<AlertRule> rule = CompileAlertRule(text);
      rs.values.push_back({name, rule.ok() ? std::string(SeverityName(rule->severity)) : "",
                           rule.ok() ? rule->owner : "",
                           std::string("not evaluated: gpulse serve evaluates rules"),
                           std::move(text)});
    }
    return Status::Ok();
  }

  Status ShowSeasons(std::vector<ResultSeries>* out) {
    std::vector<Season> seasons;
    GPULSE_RETURN_IF_ERROR(ListSeasons(db_, &seasons));
    out->emplace_back();
    ResultSeries& rs = out->back();
    rs.name = "seasons";
    rs.columns = {"name", "start", "end"};
    for (const Season& season : seasons) {
      rs.values.push_back({season.name, QueryValue(season.start_ns), QueryValue(season.end_ns)});
    }
    return Status::Ok();
  }

  static void Limit(const ShowStatement& s, ResultSeries* rs) {
    const size_t off = static_cast<size_t>(std::max<int64_t>(0, s.offset.value_or(0)));
    if (off > 0) {
      rs->values.erase(rs->values.begin(), rs->values.begin() + static_cast<ptrdiff_t>(std::min(
                                                                    off, rs->values.size())));
    }
    if (s.limit && *s.limit > 0 && rs->values.size() > static_cast<size_t>(*s.limit)) {
      rs->values.resize(static_cast<size_t>(*s.limit));
    }
  }

  Db* db_;
  const QueryOptions& options_;
  const int64_t now_;
  TagCondition cond_;
};

// CREATE ALERT: the rule must compile and its source must answer now (a
// SELECT that fails, or a WHEN naming a column the source lacks, is refused
// here rather than failing every minute in the server).
Status CreateAlert(Db* db, const StatementList& statements, size_t index,
                   const QueryOptions& options, int64_t now, std::vector<std::string>* notes) {
  // A compiled rule owns its tree, and the parsed list stays the caller's.
  Result<AlertRule> rule = CompileAlertRule(
      CloneCreateAlert(static_cast<const CreateAlertStatement&>(*statements[index])));
  if (!rule.ok()) return rule.status();
  std::vector<AlertSample> samples;
  QueryOptions trial = options;
  trial.database.clear();  // rules see every database, as the server evaluates them
  GPULSE_RETURN_IF_ERROR(EvaluateAlertRule(db, &Execute, *rule, trial, now, &samples));
  std::vector<std::pair<std::string, std::string>> existing;
  GPULSE_RETURN_IF_ERROR(db->ListDefinitions(kAlertDefinitionKind, &existing));
  for (const auto& [name, text] : existing) {
    if (name != rule->name) continue;
    if (text == rule->text) {
      notes->push_back("alert " + QuoteIdent(name) + " exists with this definition; unchanged");
      return Status::Ok();
    }
    return Status::InvalidArgument("alert " + QuoteIdent(name) +
                                   " exists with another definition; DROP ALERT it first");
  }
  GPULSE_RETURN_IF_ERROR(db->PutDefinition(kAlertDefinitionKind, rule->name, rule->text));
  size_t active = 0;
  for (const AlertSample& s : samples) active += s.active ? 1 : 0;
  notes->push_back("alert " + QuoteIdent(rule->name) + " created; now " +
                   std::to_string(samples.size()) + " group(s), " + std::to_string(active) +
                   " meeting WHEN");
  return Status::Ok();
}

// The options `statement` runs with: on the database it reaches, once the
// caller's scope allows that (statement_reach.h).
Status OptionsFor(const Statement& statement, const QueryOptions& options, QueryOptions* out) {
  Result<Reach> reach = StatementReach(statement, options.database);
  if (!reach.ok()) return reach.status();
  *out = options;
  out->answers_by_column = false;
  if (reach->kind == Reach::Kind::kNames) return Status::Ok();
  const bool every = reach->kind == Reach::Kind::kEverything || reach->database.empty();
  if (every ? options.readable_databases.has_value() : !MayRead(options, reach->database)) {
    return Status::PermissionDenied(
        every ? std::string("this statement reaches every database; the caller may read only ") +
                    ReadableList(options)
              : "the caller may not read database " + reach->database + " (it may read " +
                    ReadableList(options) + ")");
  }
  if (reach->kind == Reach::Kind::kDatabase) out->database = reach->database;
  if (options.readable_databases) {
    // The server's sources and alerts span every database: SHOW STALE of a
    // scoped caller reports its database's nodes and GPUs, not every
    // pushing host and scrape target.
    out->show_sources = nullptr;
    out->show_alerts = nullptr;
  }
  return Status::Ok();
}

// Hands statement i's answer to options.sink when there is one (keeping
// its status and notes in *out), else keeps it whole in *out. False when the
// sink stops the query.
bool Deliver(const QueryOptions& options, size_t i, StatementResult* result, QueryResult* out) {
  bool go_on = true;
  if (options.sink != nullptr) {
    for (const ResultSeries& rs : result->series) {
      if (!(go_on = options.sink->Series(i, rs))) break;
    }
    result->series.clear();
    go_on = go_on && options.sink->End(i, *result);
  }
  out->statements.push_back(std::move(*result));
  return go_on;
}

// A SELECT's answer, with its notes and any damage its reads met.
Status RunTopSelect(ExecContext* ctx, const SelectStatement& select, StatementResult* result) {
  GPULSE_RETURN_IF_ERROR(RunSelect(ctx, select, &result->series, &result->notes));
  result->notes.insert(result->notes.end(), ctx->notes.begin(), ctx->notes.end());
  const std::vector<std::string> damage = ctx->DamageNotes();
  result->notes.insert(result->notes.end(), damage.begin(), damage.end());
  return Status::Ok();
}

// EXPLAIN: the statement run with its plan described, the plan as the answer.
Status RunExplain(ExecContext* ctx, const ExplainStatement& explain, StatementResult* result) {
  ctx->explain = true;
  ctx->plan_lines.push_back(explain.select->ToString());
  std::vector<ResultSeries> ignored;
  const auto t0 = std::chrono::steady_clock::now();
  const Status status = RunSelect(ctx, *explain.select, &ignored, &result->notes);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  size_t rows = 0;
  for (const ResultSeries& rs : ignored) rows += rs.values.size();
  ctx->plan_lines.push_back("series read: " + std::to_string(ctx->series_read.load()) +
                            ", stored values read: " + std::to_string(ctx->points_read.load()));
  ctx->plan_lines.push_back("answer: " + std::to_string(ignored.size()) + " series, " +
                            std::to_string(rows) + " rows, " +
                            FormatValue(QueryValue(ms), false, TimeFormat::kRfc3339) + " ms");
  if (status.ok()) {
    ResultSeries rs;
    rs.columns = {"QUERY PLAN"};
    for (std::string& line : ctx->plan_lines) rs.values.push_back({std::move(line)});
    result->series.push_back(std::move(rs));
  }
  return status;
}

}  // namespace

bool MayRead(const QueryOptions& options, std::string_view database) {
  if (!options.readable_databases) return true;
  const auto& names = *options.readable_databases;
  return !database.empty() && std::find(names.begin(), names.end(), database) != names.end();
}

std::string ReadableList(const QueryOptions& options) {
  if (!options.readable_databases) return "every database";
  if (options.readable_databases->empty()) return "no database";
  std::string list;
  for (const std::string& n : *options.readable_databases) list += (list.empty() ? "" : ", ") + n;
  return list;
}

void Execute(Db* db, const StatementList& statements, const QueryOptions& options, QueryResult* out,
             bool keep_plans) {
  if (options.memory == nullptr) {
    // A caller without a budget of its own (an embedded Db) still has the
    // per-query bound; the answer's charge ends with this call.
    QueryMemory memory(options.limits.max_memory_bytes, nullptr);
    QueryOptions counted = options;
    counted.memory = &memory;
    return Execute(db, statements, counted, out, keep_plans);
  }
  const int64_t now = options.now_ns != 0 ? options.now_ns : WallClockNanos();
  for (size_t i = 0; i < statements.size(); ++i) {
    const auto& stmt = statements[i];
    StatementResult result;
    // Statements that run queries of their own (BASELINE, NORTHSTAR, alert
    // rules...) read those answers in rows.
    QueryOptions in_rows;
    result.status = OptionsFor(*stmt, options, &in_rows);
    in_rows.sink = nullptr;  // the statements a statement runs answer to it
    if (!result.status.ok()) {
      if (!Deliver(options, i, &result, out)) return;
      continue;
    }
    ExecContext ctx(db, in_rows, now);
    // What the statement's answer holds is given back once a sink took it.
    const uint64_t held_before = options.memory->held();
    switch (stmt->kind) {
      case StatementKind::kSelect: {
        const auto& select = static_cast<const SelectStatement&>(*stmt);
        if (HasBaseline(select)) {
          result.status = RunBaseline(db, select, in_rows, now, &result.series, &result.notes);
          break;
        }
        if (options.sink != nullptr) {
          ctx.emit = [&options, i](const ResultSeries& piece) {
            return options.sink->Series(i, piece);
          };
        }
        ctx.answers_by_column = options.answers_by_column;
        if (keep_plans) ctx.plan_cache = &ExecutorPlans();
        result.status = RunTopSelect(&ctx, select, &result);
        break;
      }
      case StatementKind::kShow:
        result.status = ShowRunner(db, in_rows, now)
                            .Run(static_cast<const ShowStatement&>(*stmt), &result.series);
        break;
      case StatementKind::kExplain:
        result.status = RunExplain(&ctx, static_cast<const ExplainStatement&>(*stmt), &result);
        break;
      case StatementKind::kDelete:
        result.status =
            RunDelete(db, static_cast<const DeleteStatement&>(*stmt), in_rows, now, &result.notes);
        break;
      case StatementKind::kNorthstar:
        result.status = RunNorthstar(db, static_cast<const NorthstarStatement&>(*stmt), in_rows,
                                     now, &result.series, &result.notes);
        break;
      case StatementKind::kDecompose:
        result.status = RunDecompose(db, static_cast<const DecomposeStatement&>(*stmt), in_rows,
                                     now, &result.series, &result.notes);
        break;
      case StatementKind::kCreateAlert:
        result.status = CreateAlert(db, statements, i, in_rows, now, &result.notes);
        break;
      case StatementKind::kCreateSeason:
        result.status = CreateSeason(db, static_cast<const CreateSeasonStatement&>(*stmt), now);
        break;
      case StatementKind::kRollouts:
        result.status = RunRollouts(db, static_cast<const RolloutsStatement&>(*stmt), in_rows, now,
                                    &result.series, &result.notes);
        break;
      case StatementKind::kAnomalies:
        result.status = RunAnomalies(db, static_cast<const AnomaliesStatement&>(*stmt), in_rows,
                                     now, &result.series, &result.notes);
        break;
      case StatementKind::kCreateDatabase: {
        // Known from now on; creating one that exists changes nothing, as in
        // InfluxDB.
        const auto& create = static_cast<const CreateDatabaseStatement&>(*stmt);
        result.status = db->PutDefinition(kDatabaseDefinitionKind, create.name, create.ToString());
        break;
      }
      case StatementKind::kDropDefinition: {
        const auto& drop = static_cast<const DropDefinitionStatement&>(*stmt);
        result.status = db->DeleteDefinition(DefinitionKindName(drop.what), drop.name);
        break;
      }
      default:
        result.status = Status::InvalidArgument("this statement cannot run here");
        break;
    }
    if (!result.status.ok()) result.series.clear();
    result.series_read = ctx.series_read.load();
    result.points_read = ctx.points_read.load();
    const bool go_on = Deliver(options, i, &result, out);
    if (options.sink != nullptr) options.memory->ReleaseTo(held_before);
    if (!go_on) return;
  }
}

}  // namespace query
}  // namespace gpulse
