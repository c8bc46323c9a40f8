// ROLLOUTS [WHERE tags and time] [OVER span] (rollouts.h).

#include "query/fleet/rollouts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "query/fleet/fleet_ledger.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"

namespace gpulse::query {

namespace {

constexpr int64_t kHourNs = 3600LL * 1'000'000'000;
// A cohort's first minutes are told to this step.
constexpr int64_t kStepNs = 600LL * 1'000'000'000;
constexpr int64_t kDefaultOverNs = 6 * kHourNs;
// The multipliers the evidence averages over: 2^1 .. 2^10.
constexpr int kMultipliers = 10;

// `t` rounded down to a multiple of `step` (times before 1970 too).
int64_t Floor(int64_t t, int64_t step) { return t - ((t % step) + step) % step; }

// GPU-minutes (or failures) by workload class (WorkloadClassOf).
using ByClass = std::map<std::string, double>;

// One driver or image over the window: its GPU-minutes and the attempts
// that failed there for software reasons, by workload class, in all and by
// step (a failure in the step it is first counted in: its lost minutes may
// span several).
struct Cohort {
  struct Step {
    ByClass minutes;
    int failures = 0;
  };
  std::map<int64_t, Step> steps;
  ByClass minutes, failures;
  double all_minutes = 0;
  std::unordered_set<uint64_t> failed;
  int64_t first_ns = INT64_MAX;
};

// The failures expected of `minutes` at `rates` (by class; `other` for a
// class the rates lack).
double Expected(const ByClass& minutes, const ByClass& rates, double other) {
  double expected = 0;
  for (const auto& [cls, m] : minutes) {
    const auto it = rates.find(cls);
    expected += m * (it == rates.end() ? other : it->second);
  }
  return expected;
}

// The evidence at the end of each step from the cohort's first, at `rates`
// failures a GPU-minute by class, and the largest: a sequential test stops
// at the first crossing, and the evidence it reached stays reached while
// later steps without failures dilute the running figure.
double PeakEvidence(const Cohort& c, const ByClass& rates, double other) {
  double expected = 0, failures = 0, peak = -INFINITY;
  for (const auto& [t, step] : c.steps) {
    expected += Expected(step.minutes, rates, other);
    failures += step.failures;
    peak = std::max(peak, RolloutEvidence(failures, expected));
  }
  return peak;
}

std::string FormatFigure(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

}  // namespace

double RolloutEvidence(double failures, double expected) {
  // log of the average of exp(k ln θ - (θ - 1) μ), summed stably.
  double terms[kMultipliers];
  double top = -INFINITY;
  for (int j = 0; j < kMultipliers; ++j) {
    const double theta = std::ldexp(1.0, j + 1);
    terms[j] = failures * std::log(theta) - (theta - 1) * expected;
    top = std::max(top, terms[j]);
  }
  double sum = 0;
  for (const double t : terms) sum += std::exp(t - top);
  return (top + std::log(sum / kMultipliers)) / std::log(10.0);
}

Status RunRollouts(Db* db, const RolloutsStatement& s, const QueryOptions& options, int64_t now_ns,
                   std::vector<ResultSeries>* out, std::vector<std::string>* notes) {
  int64_t over = kDefaultOverNs;
  if (s.over != nullptr) {
    const Result<int64_t> v = DurationNanos(*s.over);
    if (!v.ok()) return v.status();
    if (*v < 2 * kHourNs) {
      return ErrorAt(*s.over,
                     "OVER must be 2h or more: a rollout is what did not run in the window's "
                     "first hour");
    }
    over = *v;
  }
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if ((range.has_lo || range.has_hi) && s.over) {
    return ErrorAt(*s.over, "give the range either in WHERE time or with OVER, not both");
  }
  constexpr int64_t kMinuteNs = 60'000'000'000;
  LedgerOptions lo;
  lo.end_ns = Floor(range.has_hi ? range.hi : now_ns, kMinuteNs);
  // OVER's window starts on the steps' grid, so that the rule evaluated
  // every minute reads kept ten-minute rows from its first minute on.
  lo.start_ns = range.has_lo ? Floor(range.lo, kMinuteNs) : Floor(lo.end_ns - over, kStepNs);
  if (lo.end_ns - lo.start_ns < 2 * kHourNs) {
    return Status::InvalidArgument(
        "ROLLOUTS reads 2h or more: a rollout is what did not run in the range's first hour");
  }
  TagCondition where;
  GPULSE_RETURN_IF_ERROR(where.CompileTagsOnly(rest.get(), "ROLLOUTS"));
  if (rest != nullptr) {
    lo.where = &where;
    lo.where_text = rest->ToString();  // the shape of the spans kept (ledger_days.h)
  }
  // Ten-minute steps on the epoch's grid, so that a rollout's first is the
  // same whenever it is asked.
  lo.bucket_of = [](int64_t t) { return Floor(t, kStepNs); };
  lo.cohorts = true;
  lo.AskedBy(options, now_ns);
  Ledger ledger;
  GPULSE_RETURN_IF_ERROR(BuildLedger(db, lo, &ledger));

  const ContributorNames& names = ledger.contributor_names;
  std::map<std::pair<std::string, std::string>, Cohort> cohorts;
  for (const LedgerRow& row : ledger.rows) {  // one group, by step
    for (const auto& [key, minutes] : row.cohort_class_minutes) {
      Cohort& c = cohorts[names[static_cast<uint32_t>(key >> 32)]];
      const std::string cls = WorkloadClassOf(names, static_cast<uint32_t>(key));
      c.minutes[cls] += minutes;
      c.all_minutes += minutes;
      c.steps[row.bucket_ns].minutes[cls] += minutes;
      c.first_ns = std::min(c.first_ns, row.bucket_ns);
    }
    for (const auto& [id, attempts] : row.software_failures) {
      Cohort& c = cohorts[names[id]];
      for (const uint64_t attempt : attempts) {
        if (!c.failed.insert(attempt).second) continue;
        ++c.steps[row.bucket_ns].failures;
        const auto it = row.software_failure_class.find(attempt);
        c.failures[WorkloadClassOf(
            names, it == row.software_failure_class.end() ? UINT32_MAX : it->second)] += 1;
      }
    }
  }
  // Each dimension's totals by class, from which the rest of a cohort's is taken.
  std::map<std::string, std::pair<ByClass, ByClass>> totals;  // (minutes, failures)
  for (const auto& [name, c] : cohorts) {
    for (const auto& [cls, m] : c.minutes) totals[name.first].first[cls] += m;
    for (const auto& [cls, f] : c.failures) totals[name.first].second[cls] += f;
  }
  // New: seen in no step that began within the range's first hour.
  const int64_t new_from = Floor(lo.start_ns + kHourNs + kStepNs - 1, kStepNs);
  // A dimension nothing of which ran in the first hour (the data's first
  // hours, or a WHERE that matched nothing then) has nothing to be new to.
  std::set<std::string> ran_first;
  for (const auto& [name, c] : cohorts) {
    if (c.first_ns < new_from && c.all_minutes > 0) ran_first.insert(name.first);
  }
  std::set<std::string> unknown;
  std::vector<std::pair<double, ResultSeries>> found;  // (evidence, series)
  for (const auto& [name, c] : cohorts) {
    if (c.first_ns < new_from || c.all_minutes <= 0) continue;  // not new to the range
    if (!ran_first.contains(name.first)) {
      unknown.insert(name.first);
      continue;
    }
    // The rest's rate by workload class: what the rest of the dimension's
    // work of each class failed at, applied to this cohort's work of that
    // class (indirect standardization), so that a new image for notebooks is
    // judged by what notebooks fail at, not by the rest's mostly training
    // work. One failure more than the rest had, spread over its classes by
    // their minutes: a fleet whose other cohorts never failed does not make
    // one failure of the new one infinitely surprising. (The rest ran:
    // something of the dimension ran in the first hour, and this cohort did
    // not.) A class the rest never ran is taken at the rest's overall rate.
    const auto& [all_minutes, all_failures] = totals[name.first];
    const auto less_mine = [](const ByClass& all, const ByClass& mine) {
      ByClass rest = all;
      for (const auto& [cls, x] : mine) rest[cls] -= x;
      return rest;
    };
    const ByClass rest_by_class = less_mine(all_minutes, c.minutes),
                  rest_failed = less_mine(all_failures, c.failures);
    double rest_minutes = 0, rest_failures = 0;
    for (const auto& [cls, m] : rest_by_class) rest_minutes += m;
    for (const auto& [cls, f] : rest_failed) rest_failures += f;
    ByClass rates;
    for (const auto& [cls, m] : rest_by_class) {
      const auto f = rest_failed.find(cls);
      if (m >= 1) rates[cls] = (f == rest_failed.end() ? 0 : f->second) / m + 1 / rest_minutes;
    }
    const double other = (rest_failures + 1) / rest_minutes;
    const double failures = static_cast<double>(c.failed.size());
    const double expected = Expected(c.minutes, rates, other);
    const double evidence = PeakEvidence(c, rates, other);
    ResultSeries rs;
    rs.name = "rollouts";
    rs.tags = {{name.first, name.second}};
    rs.columns = {"time",      "evidence",   "failures",          "expected",
                  "gpu_hours", "rate_ratio", "rest_per_gpu_hour", "verdict"};
    std::vector<QueryValue> row = {
        QueryValue(c.first_ns),
        QueryValue(evidence),
        QueryValue(failures),
        QueryValue(expected),
        QueryValue(c.all_minutes / 60),
        QueryValue(failures / expected),
        QueryValue(60 * other),
        QueryValue(std::string(evidence >= kRolloutEvidenceCalled ? "fails beyond chance"
                                                                  : "within chance"))};
    rs.values.push_back(std::move(row));
    found.push_back({evidence, std::move(rs)});
  }
  for (const std::string& dimension : unknown) {
    notes->push_back(
        "no " + dimension +
        " ran in the range's first hour (the data's first hours?): none is called new");
  }
  if (found.empty()) {
    notes->push_back("no driver_version or image began running in the range");
    return Status::Ok();
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [evidence, rs] : found) {
    if (evidence >= kRolloutEvidenceCalled) {
      const auto& values = rs.values.front();
      notes->push_back(rs.tags.front().key + " " + rs.tags.front().value + ": " +
                       FormatFigure(std::get<double>(values[2])) + " software failures where " +
                       FormatFigure(std::get<double>(values[3])) +
                       " were expected at the rest's rate: fails beyond chance");
    }
    out->push_back(std::move(rs));
  }
  return Status::Ok();
}

}  // namespace gpulse::query
