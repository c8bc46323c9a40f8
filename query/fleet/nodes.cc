// The fleet's nodes (nodes.h).

#include "query/fleet/nodes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "query/plan/condition.h"
#include "storage/mutex.h"

namespace gpulse::query {

namespace {

using storage::NumberAt;

constexpr int64_t kMinuteNs = 60'000'000'000;
// The end an open maintenance window carries until the node leaves
// maintenance (2100-01-01): a time readers compare, not INT64_MAX, which
// does not survive the trip through a double.
constexpr int64_t kOpenWindowEndNs = 4'102'444'800'000'000'000;

bool IsNumeric(FieldType type) { return type != FieldType::kString; }

std::vector<TagMatcher> Matchers(const NodeScope& scope) {
  std::vector<TagMatcher> m;
  if (scope.database && !scope.database->empty()) m.push_back({"db", *scope.database});
  return m;
}

bool InScope(const NodeScope& scope, const Series& s) {
  return !scope.database || TagValue(s.tags, "db") == *scope.database;
}

// Each field's last point of series `id` in [since_ns, through_ns]:
// (*cols)[i] holds fields[i]'s (or nothing), *at the latest of them (0 when
// there is none). Fields are read together over the quarter hour before the
// latest point, and one by one further back where one was not there.
Status LastPoints(Db* db, SeriesId id, const std::vector<std::string>& fields, int64_t since_ns,
                  int64_t through_ns, int64_t* at, std::vector<Column>* cols) {
  constexpr int64_t kTogetherNs = 15 * kMinuteNs;
  *at = 0;
  cols->assign(fields.size(), Column{});
  int64_t first = 0, last = 0;
  const int64_t end = through_ns == INT64_MAX ? INT64_MAX : through_ns + 1;
  GPULSE_RETURN_IF_ERROR(db->TimeExtent({&id, 1}, fields, since_ns, end, &first, &last));
  if (first > last) return Status::Ok();
  *at = last;
  const int64_t from = std::max(first, last - kTogetherNs);
  std::vector<Column> read;
  GPULSE_RETURN_IF_ERROR(db->ReadSeries(id, fields, from, last + 1, &read));
  for (size_t f = 0; f < fields.size(); ++f) {
    Column& c = read[f];
    if (c.size() == 0 && from > first) {
      const std::span<const std::string> one(&fields[f], 1);
      int64_t f_first = 0, f_last = 0;
      GPULSE_RETURN_IF_ERROR(db->TimeExtent({&id, 1}, one, since_ns, from, &f_first, &f_last));
      if (f_first > f_last) continue;
      std::vector<Column> back;
      GPULSE_RETURN_IF_ERROR(db->ReadSeries(id, one, f_last, f_last + 1, &back));
      c = std::move(back[0]);
    }
    if (c.size() == 0) continue;
    (*cols)[f].type = c.type;
    AppendPoints(c, c.size() - 1, c.size(), &(*cols)[f]);
  }
  return Status::Ok();
}

std::string StringAt(const Column& c) {
  return c.type == FieldType::kString && !c.strings.empty() ? c.strings.back() : std::string();
}

double NumberOf(const Column& c) { return c.size() == 0 ? 0 : NumberAt(c, c.size() - 1); }

using NodeKey = std::pair<std::string, std::string>;  // (database, node)

// The last action of each node of `scope`.
Status LastActions(Db* db, const NodeScope& scope, std::string_view node,
                   std::map<NodeKey, NodeAction>* out) {
  std::vector<TagMatcher> match = Matchers(scope);
  if (!node.empty()) match.push_back({"node", std::string(node)});
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  GPULSE_RETURN_IF_ERROR(db->ListSeries(kNodeActionMeasurement, match, &series, &ids));
  const std::vector<std::string> fields = {"action", "before", "after", "actor", "reason"};
  for (size_t i = 0; i < series.size(); ++i) {
    if (!InScope(scope, series[i])) continue;
    int64_t at = 0;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(LastPoints(db, ids[i], fields, INT64_MIN, INT64_MAX, &at, &cols));
    if (at == 0) continue;
    NodeAction a{TagValue(series[i].tags, "db"),
                 TagValue(series[i].tags, "node"),
                 at,
                 StringAt(cols[0]),
                 StringAt(cols[1]),
                 StringAt(cols[2]),
                 StringAt(cols[3]),
                 StringAt(cols[4])};
    (*out)[{a.database, a.node}] = std::move(a);
  }
  return Status::Ok();
}

// The status a node has by its agent's report alone.
NodeStatus Reported(const NodeRow& row) {
  if (row.agent_maintenance) return NodeStatus::kMaintenance;
  if (row.last_report_ns != 0 && (!row.agent_healthy || row.gpus_seen < row.gpus_expected)) {
    return NodeStatus::kDegraded;
  }
  return NodeStatus::kHealthy;
}

void ApplyAction(const NodeAction* last, NodeRow* row) {
  row->status = Reported(*row);
  if (last == nullptr) return;
  const std::optional<NodeStatus> set = ParseNodeStatus(last->after);
  if (!set || *set == NodeStatus::kHealthy) return;
  row->status = *set;
  row->status_set = true;
  row->status_since_ns = last->time_ns;
  row->status_actor = last->actor;
  row->status_reason = last->reason;
}

Status Nodes(Db* db, const NodeScope& scope, std::string_view only, std::vector<NodeRow>* out) {
  std::vector<TagMatcher> match = Matchers(scope);
  if (!only.empty()) match.push_back({"node", std::string(only)});
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  GPULSE_RETURN_IF_ERROR(db->ListSeries("node", match, &series, &ids));
  std::map<NodeKey, NodeAction> actions;
  GPULSE_RETURN_IF_ERROR(LastActions(db, scope, only, &actions));
  const std::vector<std::string> fields = {"gpu_count",   "gpu_inventory",  "healthy",
                                           "maintenance", "driver_version", "kernel_version"};
  std::map<NodeKey, NodeRow> rows;  // a node whose tags changed is one row: its latest
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (!InScope(scope, s)) continue;
    NodeRow row;
    row.database = TagValue(s.tags, "db");
    row.node = TagValue(s.tags, "node");
    if (row.node.empty()) continue;
    row.region = TagValue(s.tags, "region");
    row.cluster = TagValue(s.tags, "cluster");
    row.sku = TagValue(s.tags, "sku");
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(
        LastPoints(db, ids[i], fields, INT64_MIN, INT64_MAX, &row.last_report_ns, &cols));
    if (row.last_report_ns != 0) {
      row.gpus_seen = static_cast<int64_t>(NumberOf(cols[0]));
      row.gpus_expected = static_cast<int64_t>(NumberOf(cols[1]));
      row.agent_healthy = cols[2].size() == 0 || NumberOf(cols[2]) != 0;
      row.agent_maintenance = NumberOf(cols[3]) != 0;
      row.driver = StringAt(cols[4]);
      row.kernel = StringAt(cols[5]);
    }
    const NodeKey key{row.database, row.node};
    const auto a = actions.find(key);
    ApplyAction(a == actions.end() ? nullptr : &a->second, &row);
    auto [it, added] = rows.try_emplace(key, row);
    if (!added && row.last_report_ns > it->second.last_report_ns) it->second = std::move(row);
  }
  for (auto& [key, row] : rows) out->push_back(std::move(row));
  return Status::Ok();
}

// Numeric `gpu` fields: `wanted` (all of them when empty), InvalidArgument
// for one that is not.
Status GpuFields(Db* db, const std::vector<std::string>& wanted, std::vector<std::string>* out) {
  std::vector<FieldInfo> fields;
  GPULSE_RETURN_IF_ERROR(db->ListFields("gpu", &fields));
  std::map<std::string, FieldType> types;
  for (const FieldInfo& f : fields) types[f.name] = f.type;
  if (wanted.empty()) {
    for (const auto& [name, type] : types) {
      if (IsNumeric(type) && !name.starts_with("__")) out->push_back(name);
    }
    return Status::Ok();
  }
  for (const std::string& name : wanted) {
    const auto it = types.find(name);
    if (it == types.end() || !IsNumeric(it->second)) {
      return Status::InvalidArgument("'" + name + "' is not a numeric field of measurement gpu");
    }
    out->push_back(name);
  }
  return Status::Ok();
}

bool GpuOrder(const std::string& a, const std::string& b) {
  // "2" before "10": GPU indexes as numbers where both are.
  const auto digits = [](const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
  };
  const bool na = digits(a), nb = digits(b);
  if (na && nb && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

Status WriteAction(Db* db, const NodeAction& a) {
  std::vector<TagRef> tags = {{"node", a.node}};
  if (!a.database.empty()) tags.push_back({"db", a.database});
  const FieldRef fields[] = {{"action", std::string_view(a.action)},
                             {"before", std::string_view(a.before)},
                             {"after", std::string_view(a.after)},
                             {"actor", std::string_view(a.actor)},
                             {"reason", std::string_view(a.reason)}};
  const PointRef p{kNodeActionMeasurement, tags, fields, a.time_ns};
  return db->Write({&p, 1});
}

// Opens (end = the open end) or closes (end = now) the node's maintenance
// window of status changes.
Status MaintenanceWindow(Db* db, const NodeRow& row, bool open, int64_t now_ns) {
  std::vector<TagRef> tags = {{"node", row.node}, {"reason", kStatusMaintenanceReason}};
  if (!row.region.empty()) tags.push_back({"region", row.region});
  if (!row.database.empty()) tags.push_back({"db", row.database});
  int64_t start = now_ns, end = kOpenWindowEndNs;
  if (!open) {
    std::vector<TagMatcher> match = {{"node", row.node},
                                     {"reason", std::string(kStatusMaintenanceReason)}};
    if (!row.database.empty()) match.push_back({"db", row.database});
    std::vector<Series> series;
    GPULSE_RETURN_IF_ERROR(db->ListSeries("maintenance", match, &series));
    start = INT64_MIN;
    for (const Series& s : series) {
      if (TagValue(s.tags, "db") != row.database) continue;
      std::vector<Column> cols;
      const std::vector<std::string> fields = {"end"};
      GPULSE_RETURN_IF_ERROR(db->ReadSeries(s, fields, INT64_MIN, now_ns + 1, &cols));
      for (size_t i = 0; i < cols[0].size(); ++i) {
        if (NumberAt(cols[0], i) > static_cast<double>(now_ns)) start = cols[0].ts[i];
      }
    }
    if (start == INT64_MIN) return Status::Ok();  // no open window (the agent's own)
    end = now_ns;
  }
  const FieldRef fields[] = {
      {"end", end}, {"duration_min", (end - start) / kMinuteNs}, {"planned", true}};
  const PointRef p{"maintenance", tags, fields, start};
  return db->Write({&p, 1});
}

}  // namespace

std::string_view NodeStatusName(NodeStatus status) {
  switch (status) {
    case NodeStatus::kHealthy:
      return "healthy";
    case NodeStatus::kDegraded:
      return "degraded";
    case NodeStatus::kMaintenance:
      return "maintenance";
  }
  return "healthy";
}

std::optional<NodeStatus> ParseNodeStatus(std::string_view name) {
  for (NodeStatus s : {NodeStatus::kHealthy, NodeStatus::kDegraded, NodeStatus::kMaintenance}) {
    if (NodeStatusName(s) == name) return s;
  }
  return std::nullopt;
}

Status ListNodes(Db* db, const NodeScope& scope, std::vector<NodeRow>* out) {
  return Nodes(db, scope, {}, out);
}

Status FindNode(Db* db, const NodeScope& scope, std::string_view node, NodeRow* out) {
  if (node.empty()) return Status::InvalidArgument("a node's name is empty");
  std::vector<NodeRow> rows;
  GPULSE_RETURN_IF_ERROR(Nodes(db, scope, node, &rows));
  if (rows.empty()) return Status::NotFound("no node '" + std::string(node) + "'");
  if (rows.size() > 1) {
    std::string names;
    for (const NodeRow& r : rows) {
      names += (names.empty() ? "" : ", ") + (r.database.empty() ? "(none)" : r.database);
    }
    return Status::InvalidArgument("node '" + std::string(node) + "' is in several databases (" +
                                   names + "): name one with db=");
  }
  *out = std::move(rows[0]);
  return Status::Ok();
}

Status ListNodeGpus(Db* db, const NodeRow& row, std::vector<GpuRow>* out) {
  const NodeScope scope{row.database};
  std::vector<LatestGpu> latest;
  bool truncated = false;
  GPULSE_RETURN_IF_ERROR(LatestGpuValues(db, scope, {{"node", row.node}}, {}, INT64_MIN, INT64_MAX,
                                         SIZE_MAX, &latest, &truncated));
  // The job each GPU ran at its last report: the node's series listed once.
  std::vector<TagMatcher> match = Matchers(scope);
  match.push_back({"node", row.node});
  std::vector<Series> series;
  GPULSE_RETURN_IF_ERROR(db->ListSeries("gpu", match, &series));
  std::multimap<std::string, const Series*> by_gpu;
  for (const Series& s : series) {
    if (InScope(scope, s)) by_gpu.emplace(TagValue(s.tags, "gpu"), &s);
  }
  const std::vector<std::string> job = {"job"};
  for (LatestGpu& g : latest) {
    GpuRow r{g.gpu, g.sku, g.last_report_ns, std::move(g.latest), {}};
    const auto [first, last] = by_gpu.equal_range(g.gpu);
    for (auto it = first; it != last; ++it) {
      std::vector<Column> cols;
      GPULSE_RETURN_IF_ERROR(
          db->ReadSeries(*it->second, job, r.last_report_ns, r.last_report_ns + 1, &cols));
      if (!StringAt(cols[0]).empty()) r.job = StringAt(cols[0]);
    }
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

Status LatestGpuValues(Db* db, const NodeScope& scope, const std::vector<TagMatcher>& match,
                       const std::vector<std::string>& wanted, int64_t since_ns, int64_t now_ns,
                       size_t limit, std::vector<LatestGpu>* out, bool* truncated) {
  *truncated = false;
  std::vector<std::string> fields;
  GPULSE_RETURN_IF_ERROR(GpuFields(db, wanted, &fields));
  std::vector<TagMatcher> matchers = Matchers(scope);
  matchers.insert(matchers.end(), match.begin(), match.end());
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  GPULSE_RETURN_IF_ERROR(db->ListSeries("gpu", matchers, &series, &ids));
  for (size_t i = 0; i < series.size() && !fields.empty(); ++i) {
    const Series& s = series[i];
    if (!InScope(scope, s)) continue;
    int64_t at = 0;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(LastPoints(db, ids[i], fields, since_ns, now_ns, &at, &cols));
    if (at == 0) continue;
    if (out->size() == limit) {
      *truncated = true;
      break;
    }
    LatestGpu g{TagValue(s.tags, "db"),
                TagValue(s.tags, "node"),
                TagValue(s.tags, "gpu"),
                TagValue(s.tags, "region"),
                TagValue(s.tags, "cluster"),
                TagValue(s.tags, "sku"),
                at,
                {}};
    for (size_t f = 0; f < fields.size(); ++f) {
      if (cols[f].size() != 0) g.latest.emplace_back(fields[f], NumberOf(cols[f]));
    }
    out->push_back(std::move(g));
  }
  std::stable_sort(out->begin(), out->end(), [](const LatestGpu& a, const LatestGpu& b) {
    if (a.database != b.database) return a.database < b.database;
    if (a.node != b.node) return a.node < b.node;
    return GpuOrder(a.gpu, b.gpu);
  });
  return Status::Ok();
}

Status NodeGpuSeries(Db* db, const NodeRow& row, const std::vector<std::string>& wanted,
                     int64_t start_ns, int64_t end_ns, int64_t step_ns, int64_t max_steps,
                     std::vector<GpuFieldSeries>* out) {
  if (step_ns <= 0 || end_ns <= start_ns) {
    return Status::InvalidArgument("the range is empty or the step is not positive");
  }
  if ((end_ns - start_ns) / step_ns >= max_steps) {
    return Status::InvalidArgument("the range holds more than " + std::to_string(max_steps) +
                                   " steps: take a longer step");
  }
  std::vector<std::string> fields;
  GPULSE_RETURN_IF_ERROR(GpuFields(db, wanted, &fields));
  std::vector<TagMatcher> match = Matchers(NodeScope{row.database});
  match.push_back({"node", row.node});
  std::vector<Series> series;
  GPULSE_RETURN_IF_ERROR(db->ListSeries("gpu", match, &series));
  std::erase_if(series, [&](const Series& s) { return TagValue(s.tags, "db") != row.database; });
  std::stable_sort(series.begin(), series.end(), [](const Series& a, const Series& b) {
    return GpuOrder(TagValue(a.tags, "gpu"), TagValue(b.tags, "gpu"));
  });
  for (const Series& s : series) {
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db->ReadSeries(s, fields, start_ns, end_ns, &cols));
    for (size_t f = 0; f < fields.size(); ++f) {
      const bool largest = fields[f] == "xid";
      GpuFieldSeries out_series{TagValue(s.tags, "gpu"), fields[f], {}};
      // Points ascend: a step's points are consecutive.
      for (size_t i = 0; i < cols[f].size();) {
        const int64_t step = (cols[f].ts[i] - start_ns) / step_ns;
        double sum = 0, most = -INFINITY;
        size_t n = 0;
        for (; i < cols[f].size() && (cols[f].ts[i] - start_ns) / step_ns == step; ++i, ++n) {
          const double v = NumberAt(cols[f], i);
          sum += v;
          most = std::max(most, v);
        }
        out_series.points.emplace_back(start_ns + step * step_ns,
                                       largest ? most : sum / static_cast<double>(n));
      }
      out->push_back(std::move(out_series));
    }
  }
  return Status::Ok();
}

Status SetNodeStatus(Db* db, const NodeScope& scope, std::string_view node, NodeStatus after,
                     int64_t now_ns, NodeAction* action, bool* changed) {
  static Mutex mu;
  MutexLock l(&mu);
  *changed = false;
  NodeRow row;
  GPULSE_RETURN_IF_ERROR(FindNode(db, scope, node, &row));
  if (action->action != "status" && row.status_set) return Status::Ok();
  action->database = row.database;
  action->node = row.node;
  action->time_ns = now_ns;
  action->before = std::string(NodeStatusName(row.status));
  action->after = std::string(NodeStatusName(after));
  const bool was = row.status_set && row.status == NodeStatus::kMaintenance;
  const bool will = after == NodeStatus::kMaintenance;
  if (was != will) GPULSE_RETURN_IF_ERROR(MaintenanceWindow(db, row, will, now_ns));
  GPULSE_RETURN_IF_ERROR(WriteAction(db, *action));
  *changed = true;
  return Status::Ok();
}

Status ListNodeActions(Db* db, const NodeScope& scope, std::string_view node, int64_t start_ns,
                       int64_t end_ns, size_t limit, std::vector<NodeAction>* out) {
  std::vector<TagMatcher> match = Matchers(scope);
  if (!node.empty()) match.push_back({"node", std::string(node)});
  std::vector<Series> series;
  GPULSE_RETURN_IF_ERROR(db->ListSeries(kNodeActionMeasurement, match, &series));
  const std::vector<std::string> fields = {"action", "before", "after", "actor", "reason"};
  for (const Series& s : series) {
    if (!InScope(scope, s)) continue;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db->ReadSeries(s, fields, start_ns, end_ns, &cols));
    // Each field's column is read on its own: take the strings by time.
    std::map<int64_t, NodeAction> by_time;
    for (size_t f = 0; f < fields.size(); ++f) {
      if (cols[f].type != FieldType::kString) continue;
      for (size_t i = 0; i < cols[f].size(); ++i) {
        NodeAction& a = by_time[cols[f].ts[i]];
        std::string* slots[] = {&a.action, &a.before, &a.after, &a.actor, &a.reason};
        *slots[f] = cols[f].strings[i];
      }
    }
    for (auto& [ts, a] : by_time) {
      a.database = TagValue(s.tags, "db");
      a.node = TagValue(s.tags, "node");
      a.time_ns = ts;
      out->push_back(std::move(a));
    }
  }
  std::stable_sort(out->begin(), out->end(),
                   [](const NodeAction& a, const NodeAction& b) { return a.time_ns > b.time_ns; });
  if (out->size() > limit) out->resize(limit);
  return Status::Ok();
}

}  // namespace gpulse::query
