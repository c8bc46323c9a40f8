// SHOW KPIS (kpis.h). A KPI is one statement, or the ratio of two, over the
// fleet schema. Each definition is parsed once, without its range; evaluating
// it runs a copy of the tree with the range added to its WHERE, as a user
// running its definition would.

#include "query/fleet/kpis.h"

#include <algorithm>
#include <cmath>

#include "query/exec/select.h"
#include "query/fleet/northstar.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"
#include "query/syntax/parser.h"

namespace gpulse::query {

namespace {

struct Kpi {
  const char* name;
  const char* unit;
  const char* numerator;    // a statement; $range is replaced by the time range
  const char* denominator;  // empty: the numerator alone; else numerator / denominator
  double scale;             // the ratio times this
  const char* column;       // the denominator's column to read (empty: the first value)
  const char* lead_lag;
  const char* owner;
  const char* intent;
  const char* description;
};

constexpr Kpi kKpis[] = {
    {"allocation_ratio", "ratio", "SELECT count(job) / count(util) FROM gpu WHERE $range", "", 1,
     "", "leading", "Infra", "ticket",
     "GPU-minutes allocated to a job over GPU-minutes reported; GROUP BY region, sku"},
    {"sm_active_allocated", "ratio", "SELECT mean(sm_active) FROM gpu WHERE job =~ /./ AND $range",
     "", 1, "", "leading", "ML Platform", "dashboard",
     "mean SM activity of the GPUs allocated to a job (DCGM_FI_PROF_SM_ACTIVE); GROUP BY team"},
    {"job_success_rate", "ratio",
     "SELECT count(job) FROM sched WHERE event = 'ended' AND status = 'succeeded' AND $range",
     "SELECT count(job) FROM sched WHERE event = 'ended' AND status != 'cancelled' AND $range", 1,
     "", "lagging", "ML Platform", "ticket",
     "attempts that succeeded over attempts that ran and ended; GROUP BY workload_class"},
    {"p95_queue_wait_s", "s",
     "SELECT percentile(wait_s, 95) FROM sched WHERE event = 'started' AND $range", "", 1, "",
     "leading", "Infra", "page",
     "95th percentile of the wait before a job started; GROUP BY queue (= priority)"},
    {"hw_errors_per_1k_gpu_hours", "per 1,000 GPU-hours",
     // The hardware XIDs of docs/metric-framework.md: the GPU, not the program, failed.
     "SELECT count(xid) FROM gpu WHERE (xid = 48 OR xid = 63 OR xid = 64 OR xid = 74 OR xid = 79 "
     "OR xid = 92 OR "
     "xid = 94 OR xid = 95) AND $range",
     "SELECT count(util) FROM gpu WHERE $range", 60000, "", "leading", "Infra", "page",
     "GPU-minutes with a hardware XID per 1,000 GPU-hours reported; GROUP BY node"},
    {"thermal_throttled_share", "ratio",
     "SELECT count(throttle_reasons) FROM gpu WHERE throttle_reasons >= 32 AND throttle_reasons < "
     "128 AND $range",
     "SELECT count(util) FROM gpu WHERE $range", 1, "", "leading", "Infra", "page",
     "GPU-minutes thermally throttled (clock event reasons 0x20 or 0x40, no power brake) over "
     "GPU-minutes reported; "
     "GROUP BY node"},
    {"data_loader_share", "ratio",
     "SELECT sum(data_loader_ms) / sum(step_time_ms) FROM job_step WHERE $range", "", 1, "",
     "leading", "ML Platform", "ticket",
     "share of step time spent waiting on the data loader; GROUP BY cluster"},
    {"grad_sync_share", "ratio",
     "SELECT sum(grad_sync_ms) / sum(step_time_ms) FROM job_step WHERE $range", "", 1, "",
     "leading", "Infra", "ticket", "share of step time spent in gradient sync; GROUP BY cluster"},
    {"cost_per_productive_gpu_hour", "USD", "SELECT sum(usd_per_hour) FROM cost WHERE $range",
     "NORTHSTAR WHERE $range", 60, "productive_gpu_minutes", "lagging", "Finance", "dashboard",
     "capacity cost (reserved and on-demand) over productive GPU-hours (NORTHSTAR); GROUP BY "
     "region"},
    {"gpu_hours", "GPU-hours", "SELECT count(job) / 60 AS gpu_hours FROM gpu WHERE $range", "", 1,
     "", "lagging", "Finance", "dashboard",
     "GPU-hours allocated; GROUP BY team, user or job, and time(1d), time(1w), time(1mo); "
     "their cost: NORTHSTAR BY team EVERY 1d (cost_usd)"},
};

// A definition's text without its range: up to " WHERE $range" or
// " AND $range", which end every definition.
std::string WithoutRange(std::string_view text) {
  for (std::string_view tail : {" WHERE $range", " AND $range"}) {
    if (text.ends_with(tail)) return std::string(text.substr(0, text.size() - tail.size()));
  }
  return std::string(text);
}

// Each KPI's numerator and denominator (null: none), parsed once.
struct Parsed {
  std::unique_ptr<Statement> numerator, denominator;
};

const std::vector<Parsed>& Definitions() {
  static const std::vector<Parsed> parsed = [] {
    std::vector<Parsed> out;
    const auto parse = [](const char* text) -> std::unique_ptr<Statement> {
      if (text[0] == '\0') return nullptr;
      Result<std::unique_ptr<Statement>> s = ParseStatement(WithoutRange(text));
      return s.ok() ? std::move(*s) : nullptr;  // a definition that does not parse: null
    };
    for (const Kpi& k : kKpis) out.push_back({parse(k.numerator), parse(k.denominator)});
    return out;
  }();
  return parsed;
}

// Statement `s` of a definition over [lo, hi): its first row's `column`, or
// its first value after `time`. Null when there is none.
Result<QueryValue> First(Db* db, const Statement* s, int64_t lo, int64_t hi,
                         const QueryOptions& options, int64_t now_ns, const char* column) {
  if (s == nullptr) return Status::InvalidArgument("internal: a KPI definition does not parse");
  std::vector<ResultSeries> series;
  std::vector<std::string> notes;
  if (s->kind == StatementKind::kSelect) {
    std::unique_ptr<SelectStatement> select = CloneSelect(static_cast<const SelectStatement&>(*s));
    select->condition = WithTimeRange(std::move(select->condition), lo, hi);
    GPULSE_RETURN_IF_ERROR(RunInnerSelect(db, options, now_ns, *select, &series, &notes));
  } else if (s->kind == StatementKind::kNorthstar) {
    NorthstarStatement northstar;
    northstar.condition = WithTimeRange(nullptr, lo, hi);
    GPULSE_RETURN_IF_ERROR(RunNorthstar(db, northstar, options, now_ns, &series, &notes));
  } else {
    return Status::InvalidArgument("internal: a KPI is a SELECT or NORTHSTAR");
  }
  if (series.empty() || series[0].values.empty()) return QueryValue();
  const ResultSeries& rs = series[0];
  size_t c = 1;
  if (column[0] != '\0') {
    for (c = 0; c < rs.columns.size() && rs.columns[c] != column; ++c) {
    }
  }
  if (c >= rs.values[0].size()) return QueryValue();
  return rs.values[0][c];
}

QueryValue Evaluate(Db* db, size_t kpi, int64_t lo, int64_t hi, const QueryOptions& options,
                    int64_t now_ns) {
  const Kpi& k = kKpis[kpi];
  const Parsed& parsed = Definitions()[kpi];
  const Result<QueryValue> num = First(db, parsed.numerator.get(), lo, hi, options, now_ns, "");
  if (!num.ok()) return QueryValue();
  double n = 0;
  const bool counted = ToDouble(*num, &n);
  if (k.denominator[0] == '\0') return counted ? QueryValue(n * k.scale) : QueryValue();
  // A ratio whose numerator matched nothing is 0 when there was something
  // to divide by (no hardware XIDs at all), and null when there was not.
  const Result<QueryValue> den =
      First(db, parsed.denominator.get(), lo, hi, options, now_ns, k.column);
  double d = 0;
  if (!den.ok() || !ToDouble(*den, &d) || d == 0) return QueryValue();
  return QueryValue(n / d * k.scale);
}

}  // namespace

bool IsKpi(std::string_view name) {
  return std::any_of(std::begin(kKpis), std::end(kKpis),
                     [&](const Kpi& k) { return name == k.name; });
}

Result<QueryValue> EvaluateKpi(Db* db, std::string_view name, int64_t start_ns, int64_t end_ns,
                               const QueryOptions& options, int64_t now_ns) {
  const auto k = std::find_if(std::begin(kKpis), std::end(kKpis),
                              [&](const Kpi& x) { return name == x.name; });
  if (k == std::end(kKpis)) return Status::NotFound("no KPI is called " + std::string(name));
  return Evaluate(db, static_cast<size_t>(k - std::begin(kKpis)), start_ns, end_ns, options,
                  now_ns);
}

Status RunShowKpis(Db* db, const ShowStatement& s, const QueryOptions& options, int64_t now_ns,
                   std::vector<ResultSeries>* out) {
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if (rest)
    return ErrorAt(*rest, "SHOW KPIS takes a time range only; run a KPI's definition to narrow it");
  const int64_t hi = range.has_hi ? range.hi : now_ns;
  if (hi < INT64_MIN / 2)
    return Status::InvalidArgument("SHOW KPIS: the range ends before the years it handles");
  const int64_t lo = range.has_lo ? range.lo : hi - 24 * 3600LL * 1'000'000'000;
  ResultSeries rs;
  rs.name = "kpis";
  rs.columns = {"name",  "value",        "unit",       "leading_lagging",
                "owner", "alert_intent", "definition", "description"};
  for (size_t i = 0; i < std::size(kKpis); ++i) {
    const Kpi& k = kKpis[i];
    std::string definition = k.numerator;
    if (k.denominator[0] != '\0') {
      definition = "(" + definition + ") / (" + k.denominator + ")";
      if (k.column[0] != '\0') definition += "." + std::string(k.column);
      if (k.scale != 1) definition += " * " + std::to_string(static_cast<int64_t>(k.scale));
    }
    rs.values.push_back({std::string(k.name), Evaluate(db, i, lo, hi, options, now_ns),
                         std::string(k.unit), std::string(k.lead_lag), std::string(k.owner),
                         std::string(k.intent), definition, std::string(k.description)});
  }
  out->push_back(std::move(rs));
  return Status::Ok();
}

}  // namespace gpulse::query
