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

// One driver or image over the window: the GPU-minutes it ran (its
// exposure) and the attempts that failed there for software reasons, in all
// and by step (a failure in the step it is first counted in: its lost
// minutes may span several).
struct Cohort {
  struct Step {
    double minutes = 0;
    int failures = 0;
  };
  std::map<int64_t, Step> steps;
  double minutes = 0;
  std::unordered_set<uint64_t> failed;
  int64_t first_ns = INT64_MAX;
};

// The evidence at the end of each step from the cohort's first, at `rate`
// failures a GPU-minute, and the largest: a sequential test stops at the
// first crossing, and the evidence it reached stays reached while later
// steps without failures dilute the running figure.
double PeakEvidence(const Cohort& c, double rate) {
  double minutes = 0, failures = 0, peak = -INFINITY;
  for (const auto& [t, step] : c.steps) {
    minutes += step.minutes;
    failures += step.failures;
    peak = std::max(peak, RolloutEvidence(failures, rate * minutes));
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
  lo.start_ns = Floor(range.has_lo ? range.lo : lo.end_ns - over, kMinuteNs);
  if (lo.end_ns - lo.start_ns < 2 * kHourNs) {
    return Status::InvalidArgument(
        "ROLLOUTS reads 2h or more: a rollout is what did not run in the range's first hour");
  }
  TagCondition where;
  GPULSE_RETURN_IF_ERROR(where.CompileTagsOnly(rest.get(), "ROLLOUTS"));
  if (rest != nullptr) lo.where = &where;
  // Ten-minute steps on the epoch's grid, so that a rollout's first is the
  // same whenever it is asked.
  lo.bucket_of = [](int64_t t) { return Floor(t, kStepNs); };
  lo.cohorts = true;
  lo.AskedBy(options, now_ns);
  Ledger ledger;
  GPULSE_RETURN_IF_ERROR(BuildLedger(db, lo, &ledger));

  std::map<std::pair<std::string, std::string>, Cohort> cohorts;
  for (const LedgerRow& row : ledger.rows) {  // one group, by step
    for (const auto& [id, minutes] : row.contributors[0]) {
      const auto& name = ledger.contributor_names[id];
      if (name.first != "driver_version" && name.first != "image") continue;
      Cohort& c = cohorts[name];
      c.minutes += minutes;
      c.steps[row.bucket_ns].minutes += minutes;
      c.first_ns = std::min(c.first_ns, row.bucket_ns);
    }
    for (const auto& [id, attempts] : row.software_failures) {
      Cohort& c = cohorts[ledger.contributor_names[id]];
      for (const uint64_t attempt : attempts)
        c.steps[row.bucket_ns].failures += c.failed.insert(attempt).second;
    }
  }
  // Each dimension's totals, from which the rest of a cohort's is taken.
  std::map<std::string, std::pair<double, double>> totals;  // dimension -> (failures, minutes)
  for (const auto& [name, c] : cohorts) {
    totals[name.first].first += static_cast<double>(c.failed.size());
    totals[name.first].second += c.minutes;
  }
  // New: seen in no step that began within the range's first hour.
  const int64_t new_from = Floor(lo.start_ns + kHourNs + kStepNs - 1, kStepNs);
  // A dimension nothing of which ran in the first hour (the data's first
  // hours, or a WHERE that matched nothing then) has nothing to be new to.
  std::set<std::string> ran_first;
  for (const auto& [name, c] : cohorts) {
    if (c.first_ns < new_from && c.minutes > 0) ran_first.insert(name.first);
  }
  std::set<std::string> unknown;
  std::vector<std::pair<double, ResultSeries>> found;  // (evidence, series)
  for (const auto& [name, c] : cohorts) {
    if (c.first_ns < new_from || c.minutes <= 0) continue;  // not new to the range
    if (!ran_first.contains(name.first)) {
      unknown.insert(name.first);
      continue;
    }
    const double failures = static_cast<double>(c.failed.size());
    const double rest_failures = totals[name.first].first - failures;
    const double rest_minutes = totals[name.first].second - c.minutes;
    ResultSeries rs;
    rs.name = "rollouts";
    rs.tags = {{name.first, name.second}};
    rs.columns = {"time",      "evidence",   "failures",          "expected",
                  "gpu_hours", "rate_ratio", "rest_per_gpu_hour", "verdict"};
    // The rest's rate, counting one failure more than it had: a fleet whose
    // other cohorts never failed does not make one failure of the new one
    // infinitely surprising. (The rest ran: something of the dimension ran in
    // the first hour, and this cohort did not.)
    const double rate = (rest_failures + 1) / rest_minutes;
    const double expected = rate * c.minutes;
    const double evidence = PeakEvidence(c, rate);
    std::vector<QueryValue> row = {
        QueryValue(c.first_ns),
        QueryValue(evidence),
        QueryValue(failures),
        QueryValue(expected),
        QueryValue(c.minutes / 60),
        QueryValue(failures / expected),
        QueryValue(60 * rate),
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
