// BASELINE (baseline.h). The aggregate is computed by an ordinary SELECT over
// the range and the history before it (a tree made from BASELINE's own, run
// through exec/); the baseline is then a median and a MAD over earlier
// buckets of the same answer.

#include "query/fleet/baseline.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "query/exec/select.h"
#include "query/fleet/calendar.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

constexpr int64_t kDayNs = 86400LL * 1'000'000'000;
constexpr double kMadToSigma = 1.4826;  // MAD x this estimates a normal's standard deviation

bool IsBaselineCall(const Expr& e) { return e.kind == ExprKind::kCall && e.text == "baseline"; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Status Bucket(const SelectStatement& s, int64_t* bucket) {
  for (const auto& d : s.dimensions) {
    if (d->kind == ExprKind::kCall && d->text == "time" && !d->children.empty()) {
      const Result<int64_t> v = DurationNanos(*d->children[0]);
      if (!v.ok()) return v.status();
      *bucket = *v;
    }
  }
  if (*bucket <= 0)
    return Status::InvalidArgument("BASELINE needs GROUP BY time(...), such as time(1h)");
  if (*bucket > kDayNs || kDayNs % *bucket != 0) {
    return Status::InvalidArgument(
        "BASELINE compares buckets of the same time of day: time() must divide a day");
  }
  return Status::Ok();
}

// SELECT <aggregate> AS value FROM <s's sources> WHERE <rest> AND time >= lo
// AND time < hi GROUP BY <s's dimensions>, with s's FILL: an empty bucket is
// no sample unless FILL says what it is (FILL(0) for counts makes a quiet
// hour a sample of 0).
std::unique_ptr<SelectStatement> HistorySelect(const SelectStatement& s, const Expr& aggregate,
                                               std::unique_ptr<Expr> rest, int64_t lo, int64_t hi) {
  auto inner = std::make_unique<SelectStatement>();
  inner->pos = s.pos;
  inner->fields.push_back({Clone(aggregate), "value"});
  for (const Source& src : s.sources) inner->sources.push_back(CloneSource(src));
  inner->condition = WithTimeRange(std::move(rest), lo, hi);
  for (const auto& d : s.dimensions) inner->dimensions.push_back(Clone(*d));
  switch (s.fill) {
    case FillKind::kNull:
    case FillKind::kPrevious:
    case FillKind::kLinear:
      inner->fill = s.fill;
      break;
    case FillKind::kValue:
      inner->fill = s.fill;
      inner->fill_value = Clone(*s.fill_value);
      break;
    default:
      inner->fill = FillKind::kNone;
  }
  return inner;
}

}  // namespace

// 1970-01-01 was a Thursday.
bool WeekendDay(int64_t ns) {
  const int64_t day = ns >= 0 ? ns / kDayNs : (ns - kDayNs + 1) / kDayNs;
  const int64_t weekday = ((day % 7) + 7 + 3) % 7;  // 0 Monday
  return weekday >= 5;
}

RobustSpread Spread(std::vector<double> samples) {
  RobustSpread out;
  out.median = Median(samples);
  for (double& x : samples) x = std::abs(x - out.median);
  out.mad = Median(std::move(samples));
  out.sigma = std::max(kMadToSigma * out.mad, 0.01 * std::max(std::abs(out.median), 1.0));
  return out;
}

bool HasBaseline(const SelectStatement& s) {
  return std::any_of(s.fields.begin(), s.fields.end(), [](const SelectField& f) {
    return f.expr != nullptr && IsBaselineCall(*f.expr);
  });
}

Status RunBaseline(Db* db, const SelectStatement& s, const QueryOptions& options, int64_t now_ns,
                   std::vector<ResultSeries>* out, std::vector<std::string>* notes) {
  if (s.fields.size() != 1 || !IsBaselineCall(*s.fields[0].expr)) {
    return ErrorAt(*s.fields[0].expr,
                   "BASELINE must be the only field: it answers value, expected, lower, "
                   "upper and deviation");
  }
  const Expr& call = *s.fields[0].expr;
  const Expr& aggregate = *call.children[0];
  const Result<int64_t> history = DurationNanos(*call.children[1]);
  if (!history.ok()) return history.status();
  if (*history < kDayNs || *history > 3660 * kDayNs) {
    return ErrorAt(*call.children[1], "the history must be from 1d to 3660d");
  }
  double k = 3;
  if (call.children.size() > 2) {
    const Expr& e = *call.children[2];
    if (e.kind != ExprKind::kInteger && e.kind != ExprKind::kFloat)
      return ErrorAt(e, "k must be a number");
    k = e.kind == ExprKind::kInteger ? static_cast<double>(e.int_value) : e.float_value;
    if (!(k > 0)) return ErrorAt(e, "k must be positive");
  }
  int64_t bucket = 0;
  GPULSE_RETURN_IF_ERROR(Bucket(s, &bucket));
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if (!range.has_lo)
    return Status::InvalidArgument("BASELINE needs a time range in WHERE (time >= ...)");
  const int64_t lo = range.lo - ((range.lo % bucket) + bucket) % bucket;
  const int64_t hi = range.has_hi ? range.hi : now_ns;

  // The aggregate over the range and its history, as the user would ask it.
  std::vector<ResultSeries> history_series;
  GPULSE_RETURN_IF_ERROR(RunInnerSelect(
      db, options, now_ns, *HistorySelect(s, aggregate, std::move(rest), lo - *history, hi),
      &history_series, notes));
  Calendar calendar;
  GPULSE_RETURN_IF_ERROR(calendar.Load(db, options.database, lo - *history, hi));

  for (const ResultSeries& series : history_series) {
    std::map<int64_t, double> values;
    for (const auto& row : series.values) {
      double v = 0;
      if (std::holds_alternative<int64_t>(row[0]) && ToDouble(row[1], &v))
        values[std::get<int64_t>(row[0])] = v;
    }
    ResultSeries rs;
    rs.name = series.name;
    rs.tags = series.tags;
    rs.columns = {"time", "value", "expected", "lower", "upper", "deviation"};
    for (const auto& [t, value] : values) {
      if (t < lo || t >= hi) continue;
      // The same time of day, on earlier days of the same kind, in the history.
      std::vector<double> samples;
      for (int64_t back = kDayNs; back <= *history; back += kDayNs) {
        const auto it = values.find(t - back);
        // A bucket in a known season, or on a node in planned maintenance,
        // is not what normal looks like.
        const int64_t b0 = t - back, b1 = t - back + bucket - 1;
        if (it != values.end() && WeekendDay(t - back) == WeekendDay(t) &&
            calendar.SeasonAt(b0, b1) == nullptr &&
            !calendar.GroupInMaintenance(series.tags, b0, b1)) {
          samples.push_back(it->second);
        }
      }
      if (samples.empty()) {
        rs.values.push_back({t, value, QueryValue(), QueryValue(), QueryValue(), QueryValue()});
        continue;
      }
      const RobustSpread spread = Spread(std::move(samples));
      const double expected = spread.median, sigma = spread.sigma;
      rs.values.push_back({t, value, expected, expected - k * sigma, expected + k * sigma,
                           (value - expected) / sigma});
    }
    if (!rs.values.empty()) out->push_back(std::move(rs));
  }
  return Status::Ok();
}

}  // namespace gpulse::query
