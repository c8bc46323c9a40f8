// NORTHSTAR [BY dims] [WHERE tags and time] [OVER span] [EVERY bucket]
// (northstar.h).

#include "query/fleet/northstar.h"

#include <algorithm>
#include <map>
#include <optional>

#include "query/fleet/fleet_ledger.h"
#include "query/plan/buckets.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

constexpr int64_t kDefaultOverNs = 24 * 3600LL * 1'000'000'000;

// What NORTHSTAR may group by: the gpu series' tags and the minute's
// attribution.
bool GroupableKey(const std::string& key) {
  static const char* const kKeys[] = {"region", "cluster",        "sku",  "node", "gpu",
                                      "team",   "workload_class", "user", "job"};
  return std::any_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; });
}

// WHERE filters the gpu series by their tags; the minute's attribution is
// a field, which a tag condition would silently match nowhere.
Status NoAttributionIn(const Expr* e) {
  if (e == nullptr) return Status::Ok();
  if (e->kind == ExprKind::kVarRef &&
      (e->text == "team" || e->text == "user" || e->text == "job" || e->text == "workload_class")) {
    return ErrorAt(*e, e->text +
                           " is the attribution of each minute, not a tag of the gpu series: "
                           "group BY " +
                           e->text + " and read its rows instead of filtering on it");
  }
  for (const auto& c : e->children) GPULSE_RETURN_IF_ERROR(NoAttributionIn(c.get()));
  return Status::Ok();
}

Status Dimensions(const NorthstarStatement& s, std::vector<std::string>* by) {
  for (const auto& d : s.dimensions) {
    if (d->kind != ExprKind::kVarRef || !GroupableKey(d->text)) {
      return ErrorAt(
          *d,
          "NORTHSTAR groups BY region, cluster, sku, node, gpu, team, workload_class, user or job, "
          "not " +
              d->ToString());
    }
    by->push_back(d->text);
  }
  return Status::Ok();
}

Status Span(const Expr* e, const char* what, int64_t* ns) {
  if (e == nullptr) return Status::Ok();
  const Result<int64_t> v = DurationNanos(*e);
  if (!v.ok()) return v.status();
  if (*v <= 0) return ErrorAt(*e, std::string(what) + " must be a positive duration");
  *ns = *v;
  return Status::Ok();
}

}  // namespace

Status RunNorthstar(Db* db, const NorthstarStatement& s, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes) {
  LedgerOptions lo;
  GPULSE_RETURN_IF_ERROR(Dimensions(s, &lo.by));
  int64_t over = kDefaultOverNs;
  GPULSE_RETURN_IF_ERROR(Span(s.over.get(), "OVER", &over));
  // EVERY: buckets on the epoch's grid (UTC, or tz()'s zone; shifted by
  // OFFSET), as GROUP BY time's, so that a day is a calendar day whatever
  // the range's start; a bucket that began before the range is labelled
  // with its own start. EVERY 1mo: calendar months.
  std::optional<Bucketer> buckets;
  if (s.every != nullptr) {
    const bool months = s.every->kind == ExprKind::kDuration &&
                        std::any_of(s.every->duration.begin(), s.every->duration.end(),
                                    [](const DurationPart& p) { return p.unit == "mo"; });
    int64_t every = 0;
    if (!months) GPULSE_RETURN_IF_ERROR(Span(s.every.get(), "EVERY", &every));
    int64_t offset = 0;
    if (s.every_offset != nullptr) {
      const Result<int64_t> v = DurationNanos(*s.every_offset);
      if (!v.ok()) return v.status();
      offset = *v;
    }
    Result<Bucketer> b = Bucketer::Make(s.every->duration, offset, s.timezone);
    if (!b.ok()) return ErrorAt(*s.every, b.status().message());
    buckets = std::move(*b);
    lo.bucket_of = [&buckets](int64_t t) { return buckets->Start(t); };
  }
  if (s.every == nullptr && s.timezone.has_value()) {
    return Status::InvalidArgument("tz() lays EVERY's buckets in a zone: give EVERY too");
  }
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if ((range.has_lo || range.has_hi) && s.over) {
    return ErrorAt(*s.over, "give the range either in WHERE time or with OVER, not both");
  }
  lo.end_ns = range.has_hi ? range.hi : now_ns;
  lo.start_ns = range.has_lo ? range.lo : lo.end_ns - over;
  TagCondition where;
  GPULSE_RETURN_IF_ERROR(NoAttributionIn(rest.get()));
  GPULSE_RETURN_IF_ERROR(where.CompileTagsOnly(rest.get(), "NORTHSTAR"));
  if (rest != nullptr) {
    lo.where = &where;
    lo.where_text = rest->ToString();  // the shape of the days kept (ledger_days.h)
  }
  lo.AskedBy(options, now_ns);
  Ledger ledger;
  GPULSE_RETURN_IF_ERROR(BuildLedger(db, lo, &ledger));
  const std::vector<LedgerRow>& rows = ledger.rows;
  if (rows.empty()) {
    notes->push_back(
        "no GPU-minutes of capacity in the range: is there a gpu measurement "
        "(docs/fleet-schema.md)?");
    return Status::Ok();
  }
  // One series per group, a row per bucket; losses as shares of capacity.
  std::map<std::vector<std::string>, ResultSeries> series;
  for (const LedgerRow& row : rows) {
    ResultSeries& rs = series[row.group];
    if (rs.columns.empty()) {
      rs.name = "northstar";
      for (size_t k = 0; k < lo.by.size(); ++k) rs.tags.push_back({lo.by[k], row.group[k]});
      std::sort(rs.tags.begin(), rs.tags.end(),
                [](const Tag& a, const Tag& b) { return a.key < b.key; });
      rs.columns = {"time", "goodput", "productive_gpu_minutes", "capacity_gpu_minutes"};
      for (size_t l = 1; l < kLossCount; ++l)
        rs.columns.emplace_back(LossName(static_cast<Loss>(l)));
      rs.columns.emplace_back("failed_jobs");
      rs.columns.emplace_back("cost_usd");
      rs.columns.emplace_back("usd_per_productive_gpu_hour");
    }
    const double capacity = row.Capacity();
    std::vector<QueryValue> values = {QueryValue(row.bucket_ns),
                                      QueryValue(row.minutes[0] / capacity),
                                      QueryValue(row.minutes[0]), QueryValue(capacity)};
    for (size_t l = 1; l < kLossCount; ++l) values.emplace_back(row.minutes[l] / capacity);
    values.emplace_back(static_cast<int64_t>(row.failed_attempts.size()));
    // Null without prices (no cost measurement) and, per productive hour,
    // without productive minutes.
    values.push_back(row.priced_minutes > 0 ? QueryValue(row.cost_usd) : QueryValue());
    values.push_back(row.priced_minutes > 0 && row.minutes[0] > 0
                         ? QueryValue(row.cost_usd / (row.minutes[0] / 60))
                         : QueryValue());
    rs.values.push_back(std::move(values));
  }
  for (auto& [group, rs] : series) {
    std::sort(rs.values.begin(), rs.values.end(), [](const auto& a, const auto& b) {
      return std::get<int64_t>(a[0]) < std::get<int64_t>(b[0]);
    });
    out->push_back(std::move(rs));
  }
  return Status::Ok();
}

}  // namespace gpulse::query
