// SHOW STALE (stale.h).

#include "query/fleet/stale.h"

#include <algorithm>
#include <map>
#include <set>

#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/format.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

using storage::NumberAt;

constexpr int64_t kMinuteNs = 60'000'000'000;
// The default bound: five missed GPU-minutes.
constexpr int64_t kDefaultBoundNs = 5 * kMinuteNs;
// How far back a silent source's last point is looked for.
constexpr int64_t kLookbackNs = 7 * 1440 * kMinuteNs;

struct Finding {
  std::string kind, source;
  int64_t last_seen = 0;  // 0: not within the look-back
  std::string detail;
};

int64_t LastTimestamp(const std::vector<Column>& cols) {
  int64_t last = 0;
  for (const Column& c : cols) {
    if (!c.ts.empty()) last = std::max(last, c.ts.back());
  }
  return last;
}

std::string Minutes(int64_t ns) { return std::to_string(ns / kMinuteNs) + " min"; }

class StaleChecker {
 public:
  StaleChecker(Db* db, const QueryOptions& options, int64_t now, int64_t bound,
               const TagCondition* where)
      : db_(db), options_(options), now_(now), bound_(bound), where_(where) {
    if (!options.database.empty()) scope_.push_back({"db", options.database});
  }

  Status Run(std::vector<Finding>* out) {
    GPULSE_RETURN_IF_ERROR(Nodes(out));
    GPULSE_RETURN_IF_ERROR(Gpus(out));
    Sources(out);
    return Status::Ok();
  }

 private:
  bool Fresh(int64_t last) const { return last > 0 && now_ - last <= bound_; }
  // The end of the reads: now included.
  int64_t Through() const { return now_ == INT64_MAX ? INT64_MAX : now_ + 1; }

  // Nodes: silent past the bound, or reporting fewer GPUs than inventory;
  // a cluster none of whose nodes reported.
  Status Nodes(std::vector<Finding>* out) {
    std::vector<Series> series;
    GPULSE_RETURN_IF_ERROR(db_->ListSeries("node", scope_, &series));
    std::map<std::string, std::pair<int, int>> clusters;  // nodes fresh, nodes in all
    std::map<std::string, int64_t> cluster_last;
    for (const Series& s : series) {
      if (!where_->Matches(s.tags)) continue;
      std::vector<Column> cols;
      const std::vector<std::string> fields = {"gpu_count", "gpu_inventory"};
      GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, now_ - kLookbackNs, Through(), &cols));
      const std::string node = TagValue(s.tags, "node");
      const std::string cluster = TagValue(s.tags, "cluster");
      const int64_t last = LastTimestamp(cols);
      node_last_[node] = last;
      auto& [fresh, all] = clusters[cluster];
      ++all;
      cluster_last[cluster] = std::max(cluster_last[cluster], last);
      if (!Fresh(last)) {
        out->push_back({"silent_node", node, last,
                        "no node point for " + (last ? Minutes(now_ - last) : "7 days")});
        continue;
      }
      ++fresh;
      if (!cols[0].ts.empty() && !cols[1].ts.empty() && cols[0].ts.back() == cols[1].ts.back()) {
        const double reported = NumberAt(cols[0], cols[0].size() - 1);
        const double inventory = NumberAt(cols[1], cols[1].size() - 1);
        if (reported < inventory) {
          out->push_back({"missing_gpus", node, last,
                          std::to_string(static_cast<int64_t>(reported)) + " of " +
                              std::to_string(static_cast<int64_t>(inventory)) + " GPUs reported"});
        }
      }
    }
    for (const auto& [cluster, counts] : clusters) {
      if (!cluster.empty() && counts.first == 0) {
        out->push_back({"silent_cluster", cluster, cluster_last[cluster],
                        "none of its " + std::to_string(counts.second) + " nodes reported"});
      }
    }
    return Status::Ok();
  }

  // GPUs: silent while their node reports, or allocated with no use for the
  // whole bound.
  Status Gpus(std::vector<Finding>* out) {
    std::vector<Series> series;
    GPULSE_RETURN_IF_ERROR(db_->ListSeries("gpu", scope_, &series));
    for (const Series& s : series) {
      if (options_.cancelled && options_.cancelled()) {
        return Status::Cancelled("SHOW STALE cancelled");
      }
      if (!where_->Matches(s.tags)) continue;
      const std::string node = TagValue(s.tags, "node");
      const std::string name = node + "/" + TagValue(s.tags, "gpu");
      std::vector<Column> cols;
      const std::vector<std::string> fields = {"util", "job"};
      const auto node_last = node_last_.find(node);
      const bool node_fresh = node_last != node_last_.end() && Fresh(node_last->second);
      GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, now_ - bound_, Through(), &cols));
      if (cols[0].ts.empty()) {
        if (node_fresh) {
          std::vector<Column> older;
          const std::vector<std::string> util_only = {"util"};
          GPULSE_RETURN_IF_ERROR(
              db_->ReadSeries(s, util_only, now_ - kLookbackNs, Through(), &older));
          const int64_t last = LastTimestamp(older);
          out->push_back({"silent_gpu", name, last,
                          "its node reports, the GPU has not for " +
                              (last ? Minutes(now_ - last) : "7 days")});
        }
        continue;
      }
      // Allocated the whole bound (every point names a job) and never used.
      const Column& util = cols[0];
      const Column& job = cols[1];
      bool idle = job.size() == util.size() && job.type == FieldType::kString && util.size() >= 2;
      for (size_t i = 0; idle && i < util.size(); ++i)
        idle = NumberAt(util, i) == 0 && !job.strings[i].empty();
      if (idle) {
        out->push_back({"idle_allocated", name, util.ts.back(),
                        "job " + job.strings.back() + " holds it with util 0 for " +
                            Minutes(now_ - util.ts.front())});
      }
    }
    return Status::Ok();
  }

  // The server's scrape targets and pushing hosts (when asked through one).
  void Sources(std::vector<Finding>* out) const {
    if (!options_.show_sources) return;
    ResultSeries sources;
    options_.show_sources(&sources);
    const auto column = [&](const char* name) {
      return static_cast<size_t>(std::find(sources.columns.begin(), sources.columns.end(), name) -
                                 sources.columns.begin());
    };
    const size_t kind = column("kind"), name = column("name"), last = column("last_seen");
    for (const auto& row : sources.values) {
      if (last >= row.size() || name >= row.size()) continue;
      const int64_t seen =
          std::holds_alternative<int64_t>(row[last]) ? std::get<int64_t>(row[last]) : 0;
      if (Fresh(seen)) continue;
      const std::string what = kind < row.size() && std::holds_alternative<std::string>(row[kind])
                                   ? std::get<std::string>(row[kind])
                                   : "source";
      if (!std::holds_alternative<std::string>(row[name])) continue;
      out->push_back({"silent_source", std::get<std::string>(row[name]), seen,
                      what + " silent for " + (seen ? Minutes(now_ - seen) : "ever")});
    }
  }

  Db* db_;
  const QueryOptions& options_;
  const int64_t now_, bound_;
  const TagCondition* where_;
  std::vector<TagMatcher> scope_;
  std::map<std::string, int64_t> node_last_;
};

}  // namespace

Status RunShowStale(Db* db, const ShowStatement& s, const QueryOptions& options, int64_t now_ns,
                    std::vector<ResultSeries>* out) {
  // WHERE: tag conditions on the node and gpu series, and `time <= T` (or
  // `<`) to ask as of T instead of now, for a look back at history.
  TimeRange range;
  std::unique_ptr<Expr> rest;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &rest));
  if (range.has_lo)
    return ErrorAt(*s.condition, "SHOW STALE takes an upper time bound only (as of when)");
  if (range.has_hi) now_ns = range.hi;
  if (now_ns < INT64_MIN / 2)
    return ErrorAt(*s.condition, "the time is before the years SHOW STALE handles");
  TagCondition where;
  GPULSE_RETURN_IF_ERROR(where.CompileTagsOnly(rest.get(), "SHOW STALE"));
  int64_t bound = kDefaultBoundNs;
  if (s.stale_after) {
    const Result<int64_t> v = DurationNanos(*s.stale_after);
    if (!v.ok()) return v.status();
    if (*v <= 0) return ErrorAt(*s.stale_after, "the freshness bound must be positive");
    bound = *v;
  }
  std::vector<Finding> findings;
  GPULSE_RETURN_IF_ERROR(StaleChecker(db, options, now_ns, bound, &where).Run(&findings));
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.source < b.source;
  });
  ResultSeries rs;
  rs.name = "stale";
  rs.columns = {"kind", "source", "last_seen", "detail"};
  for (Finding& f : findings) {
    const QueryValue seen =
        f.last_seen ? QueryValue(FormatValue(QueryValue(f.last_seen), true, TimeFormat::kRfc3339))
                    : QueryValue();
    rs.values.push_back({std::move(f.kind), std::move(f.source), seen, std::move(f.detail)});
  }
  if (!rs.values.empty()) out->push_back(std::move(rs));
  return Status::Ok();
}

}  // namespace gpulse::query
