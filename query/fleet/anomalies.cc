// ANOMALIES (anomalies.h). The daily features come from two ordinary SELECTs
// (so the 1d tier answers them when it is kept), joined by group and day.

#include "query/fleet/anomalies.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "query/exec/select.h"
#include "query/fleet/baseline.h"
#include "query/fleet/isolation_forest.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

constexpr int64_t kDayNs = 86400LL * 1'000'000'000;
constexpr int64_t kDefaultOverNs = 30 * kDayNs;
constexpr int64_t kMaxOverNs = 3660 * kDayNs;
// Fewer group-days of a kind than this are not scored.
constexpr size_t kMinDays = 8;

// What both gpu and node points carry.
bool GroupableKey(const std::string& key) {
  return key == "region" || key == "cluster" || key == "node" || key == "sku";
}

using GroupDay = std::pair<std::vector<std::string>, int64_t>;  // tag values, day

// SELECT mean(field), percentile(field, 95) FROM measurement WHERE
// <condition> GROUP BY <by>, time(1d): a feature pair per group and day.
std::unique_ptr<SelectStatement> FeatureSelect(const std::string& field,
                                               const std::string& measurement,
                                               const std::vector<std::string>& by,
                                               const Expr& condition) {
  auto s = std::make_unique<SelectStatement>();
  std::vector<std::unique_ptr<Expr>> mean_args;
  mean_args.push_back(MakeVarRef(field));
  s->fields.push_back({MakeCall("mean", std::move(mean_args)), ""});
  std::vector<std::unique_ptr<Expr>> p95_args;
  p95_args.push_back(MakeVarRef(field));
  p95_args.push_back(MakeInteger(95));
  s->fields.push_back({MakeCall("percentile", std::move(p95_args)), ""});
  Source from;
  from.measurement.name = measurement;
  s->sources.push_back(std::move(from));
  s->condition = Clone(condition);
  for (const std::string& key : by) s->dimensions.push_back(MakeVarRef(key));
  std::vector<std::unique_ptr<Expr>> day;
  day.push_back(MakeDuration(1, "d"));
  s->dimensions.push_back(MakeCall("time", std::move(day)));
  return s;
}

// Runs `select` and adds each row's two value columns as features
// [offset, offset + 2) of its group-day.
Status Features(Db* db, const SelectStatement& select, const std::vector<std::string>& by,
                const QueryOptions& options, int64_t now_ns, size_t offset,
                std::map<GroupDay, std::vector<double>>* rows, std::vector<std::string>* notes) {
  std::vector<ResultSeries> series;
  GPULSE_RETURN_IF_ERROR(RunInnerSelect(db, options, now_ns, select, &series, notes));
  for (const ResultSeries& rs : series) {
    std::vector<std::string> group;
    for (const std::string& key : by) {
      const auto t =
          std::find_if(rs.tags.begin(), rs.tags.end(), [&](const Tag& x) { return x.key == key; });
      group.push_back(t == rs.tags.end() ? "" : t->value);
    }
    for (const auto& row : rs.values) {
      double a = 0, b = 0;
      // A day without a finite value (no points, or an agent that sent
      // inf) is no point: the forest's cuts need finite bounds.
      if (!std::holds_alternative<int64_t>(row[0]) || !ToDouble(row[1], &a) ||
          !ToDouble(row[2], &b) || !std::isfinite(a) || !std::isfinite(b)) {
        continue;
      }
      std::vector<double>& f = (*rows)[{group, std::get<int64_t>(row[0])}];
      f.resize(4, NAN);
      f[offset] = a;
      f[offset + 1] = b;
    }
  }
  return Status::Ok();
}

// Scores each group-day against the days of its kind (weekdays, weekend
// days) with an isolation forest: a series per group, a row per day.
void ScoreGroupDays(const std::vector<std::vector<double>>& points,
                    const std::vector<const GroupDay*>& keys,
                    const std::map<GroupDay, std::vector<double>>& rows,
                    const std::vector<std::string>& by, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes) {
  // Weekdays and weekends are different normals (as for BASELINE): each
  // kind of day is scored against the days of its kind, else every weekend
  // would be the odd day out.
  std::map<std::vector<std::string>, ResultSeries> series;
  size_t flagged = 0, scored = 0;
  for (const bool weekend : {false, true}) {
    std::vector<size_t> members;
    for (size_t i = 0; i < points.size(); ++i) {
      if (WeekendDay(keys[i]->second) == weekend) members.push_back(i);
    }
    if (members.empty()) continue;
    if (members.size() < kMinDays) {
      notes->push_back(std::string(weekend ? "weekend days" : "weekdays") +
                       " are not scored: " + std::to_string(members.size()) + " group-days, and " +
                       std::to_string(kMinDays) + " are needed to tell odd from ordinary");
      continue;
    }
    std::vector<std::vector<double>> sample;
    for (size_t i : members) sample.push_back(points[i]);
    const IsolationForest forest(sample, {});
    for (size_t i : members) {
      const auto& [group, day] = *keys[i];
      ResultSeries& rs = series[group];
      if (rs.columns.empty()) {
        rs.name = "anomalies";
        for (size_t k = 0; k < by.size(); ++k) rs.tags.push_back({by[k], group[k]});
        std::sort(rs.tags.begin(), rs.tags.end(),
                  [](const Tag& a, const Tag& b) { return a.key < b.key; });
        rs.columns = {"time", "mean_util", "p95_util", "mean_cpu", "p95_cpu", "score", "anomalous"};
      }
      const std::vector<double>& f = rows.at(*keys[i]);
      auto cell = [](double v) { return std::isnan(v) ? QueryValue() : QueryValue(v); };
      const double score = forest.Score(points[i]);
      flagged += score >= kAnomalyThreshold ? 1 : 0;
      ++scored;
      rs.values.push_back({QueryValue(day), cell(f[0]), cell(f[1]), cell(f[2]), cell(f[3]),
                           QueryValue(score), QueryValue(score >= kAnomalyThreshold)});
    }
  }
  for (auto& [group, rs] : series) {
    std::sort(rs.values.begin(), rs.values.end(), [](const auto& a, const auto& b) {
      return std::get<int64_t>(a[0]) < std::get<int64_t>(b[0]);
    });
  }
  for (auto& [group, rs] : series) out->push_back(std::move(rs));
  if (scored == 0) return;
  notes->push_back(std::to_string(flagged) + " of " + std::to_string(scored) +
                   " group-days scored " + std::to_string(kAnomalyThreshold).substr(0, 3) +
                   " or more (an isolation forest of 100 trees)");
}

}  // namespace

Status RunAnomalies(Db* db, const AnomaliesStatement& s, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes) {
  std::vector<std::string> by;
  for (const auto& d : s.dimensions) {
    if (d->kind != ExprKind::kVarRef || !GroupableKey(d->text)) {
      return ErrorAt(*d, "ANOMALIES groups BY region, cluster, node or sku, not " + d->ToString());
    }
    by.push_back(d->text);
  }
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if ((range.has_lo || range.has_hi) && s.over) {
    return ErrorAt(*s.over, "give the range either in WHERE time or with OVER, not both");
  }
  int64_t over = kDefaultOverNs;
  if (s.over) {
    const Result<int64_t> v = DurationNanos(*s.over);
    if (!v.ok()) return v.status();
    if (*v < kDayNs || *v > kMaxOverNs) return ErrorAt(*s.over, "OVER must be from 1d to 3660d");
    over = *v;
  }
  TagCondition tags;
  GPULSE_RETURN_IF_ERROR(tags.CompileTagsOnly(rest.get(), "ANOMALIES"));
  // Whole UTC days: from the day of the start to the end of the day of the
  // end. Without an end, the range stops at the start of today: today's
  // first hours are not a day, and would look odd every morning.
  const int64_t today = now_ns - ((now_ns % kDayNs) + kDayNs) % kDayNs;
  const int64_t hi_raw = range.has_hi ? range.hi : today;
  const int64_t lo_raw = range.has_lo ? range.lo : hi_raw - over;
  if (lo_raw < INT64_MIN / 2 || hi_raw > INT64_MAX / 2 || hi_raw <= lo_raw) {
    return Status::InvalidArgument("ANOMALIES: the time range is empty or out of bounds");
  }
  const int64_t lo = lo_raw - ((lo_raw % kDayNs) + kDayNs) % kDayNs;
  const int64_t hi = hi_raw + (kDayNs - ((hi_raw % kDayNs) + kDayNs) % kDayNs) % kDayNs;
  if (hi - lo > kMaxOverNs)
    return Status::InvalidArgument("ANOMALIES: the range is over 3660 days");

  const std::unique_ptr<Expr> where = WithTimeRange(std::move(rest), lo, hi);
  std::map<GroupDay, std::vector<double>> rows;
  GPULSE_RETURN_IF_ERROR(Features(db, *FeatureSelect("util", "gpu", by, *where), by, options,
                                  now_ns, 0, &rows, notes));
  GPULSE_RETURN_IF_ERROR(Features(db, *FeatureSelect("cpu_util", "node", by, *where), by, options,
                                  now_ns, 2, &rows, notes));

  // Features every group-day has; a day missing one of them is left out.
  std::vector<size_t> kept;
  for (size_t f = 0; f < 4; ++f) {
    const bool any = std::any_of(rows.begin(), rows.end(),
                                 [&](const auto& r) { return !std::isnan(r.second[f]); });
    if (any) kept.push_back(f);
  }
  std::vector<std::vector<double>> points;
  std::vector<const GroupDay*> keys;
  size_t incomplete = 0;
  for (const auto& [key, f] : rows) {
    std::vector<double> p;
    for (size_t k : kept) p.push_back(f[k]);
    if (std::any_of(p.begin(), p.end(), [](double v) { return std::isnan(v); })) {
      ++incomplete;
      continue;
    }
    points.push_back(std::move(p));
    keys.push_back(&key);
  }
  if (incomplete > 0) {
    notes->push_back(std::to_string(incomplete) +
                     " group-days lacked a feature the others have (no gpu or node points that "
                     "day) and were not scored");
  }
  const bool gpu = !kept.empty() && kept.front() < 2, cpu = !kept.empty() && kept.back() >= 2;
  if (gpu && !cpu) {
    notes->push_back(
        "scored on GPU util only: no node cpu_util in the range (docs/fleet-schema.md)");
  } else if (cpu && !gpu) {
    notes->push_back("scored on host CPU only: no gpu util in the range (docs/fleet-schema.md)");
  }
  ScoreGroupDays(points, keys, rows, by, out, notes);
  return Status::Ok();
}

}  // namespace gpulse::query
