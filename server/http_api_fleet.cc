// The fleet's REST API (docs/http-api.md, "The fleet"): nodes, a node's
// GPUs and series, the latest value of every GPU field, node status and the
// audit trail of actions. The meaning is query/fleet/nodes.h's; this file
// reads parameters and writes JSON.

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "query/fleet/nodes.h"
#include "query/runtime/format.h"
#include "server/http_api.h"
#include "server/http_reply.h"

namespace gpulse::server {

namespace {

using json = nlohmann::json;

constexpr int64_t kMsNs = 1'000'000;
constexpr int64_t kMinuteMs = 60'000;
// A node's series: the fields a chart of its GPUs shows when none are named.
const std::vector<std::string> kDefaultNodeFields = {"util", "temp", "power", "sm_clock", "xid"};
// At most this many steps in a node's series (Prometheus' bound on a range
// query).
constexpr int64_t kMaxSteps = 11'000;
// /api/v1/metrics/latest: GPUs in one answer unless limit= says otherwise,
// and at most.
constexpr size_t kDefaultLatestGpus = 10'000;
constexpr size_t kMaxLatestGpus = 200'000;
constexpr size_t kDefaultActions = 1'000;
constexpr size_t kMaxActions = 100'000;

using Params = std::map<std::string, std::string>;

std::string Param(const Params& params, const char* key) {
  const auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

// start= and end= into range_ms, each left as it is when absent: the error
// when one is not a time.
std::optional<std::string> ReadRange(const Params& params, int64_t range_ms[2]) {
  for (int i = 0; i < 2; ++i) {
    const char* key = i == 0 ? "start" : "end";
    const std::string text = Param(params, key);
    if (!text.empty() && !ParsePromTime(text, &range_ms[i])) {
      return std::string("bad ") + key + " '" + text +
             "': Unix seconds or RFC 3339 (2026-11-01T00:00:00Z)";
    }
  }
  return std::nullopt;
}

// limit= (1 to `most`) into *limit, left as it is when absent: the error
// when it is not such a number.
std::optional<std::string> ReadLimit(const Params& params, size_t most, size_t* limit) {
  const std::string text = Param(params, "limit");
  if (text.empty()) return std::nullopt;
  size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n == 0 || n > most) {
    return "bad limit '" + text + "': a whole number from 1 to " + std::to_string(most);
  }
  *limit = n;
  return std::nullopt;
}

json Time(int64_t ns) { return ns == 0 ? json(nullptr) : json(query::Rfc3339(ns)); }

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    if (comma > from) out.push_back(text.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

json NodeJson(const query::NodeRow& row, int64_t now_ns, size_t alerts) {
  json j = {{"node", row.node},
            {"database", row.database},
            {"region", row.region},
            {"cluster", row.cluster},
            {"sku", row.sku},
            {"gpus_seen", row.gpus_seen},
            {"gpus_expected", row.gpus_expected},
            {"driver", row.driver},
            {"kernel", row.kernel},
            {"last_report", Time(row.last_report_ns)},
            {"last_report_age_s", row.last_report_ns == 0
                                      ? json(nullptr)
                                      : json((now_ns - row.last_report_ns) / 1'000'000'000)},
            {"agent_healthy", row.agent_healthy},
            {"status", query::NodeStatusName(row.status)},
            {"status_set", row.status_set},
            {"active_alerts", alerts}};
  if (row.status_set) {
    j["status_since"] = Time(row.status_since_ns);
    j["status_actor"] = row.status_actor;
    j["status_reason"] = row.status_reason;
  }
  return j;
}

json ActionJson(const query::NodeAction& a) {
  return {{"time", Time(a.time_ns)}, {"node", a.node},     {"database", a.database},
          {"action", a.action},      {"before", a.before}, {"after", a.after},
          {"actor", a.actor},        {"reason", a.reason}};
}

json Values(const std::vector<std::pair<std::string, double>>& latest) {
  json values = json::object();
  for (const auto& [field, v] : latest) values[field] = v;
  return values;
}

}  // namespace

std::optional<Response> HttpApi::FleetScope(const Request& request,
                                            const std::map<std::string, std::string>& params,
                                            Access access, query::NodeScope* scope) {
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, params, &refusal);
  if (!grant) return refusal;
  const auto db = params.find("db");
  if (db != params.end()) {
    scope->database = db->second;
    return Forbid(request, *grant, db->second.empty() ? "*" : db->second, access, "db=");
  }
  // A token of one database reads (and sets) that database's nodes.
  const std::string sole = grant->For(access).Sole();
  if (!sole.empty()) {
    scope->database = sole;
    return std::nullopt;
  }
  return Forbid(request, *grant, "*", access, "db=");
}

std::string HttpApi::ActorOf(const Request& request,
                             const std::map<std::string, std::string>& params) {
  Response ignored;
  const std::optional<Grant> grant = Authenticate(request, params, &ignored);
  if (!grant || grant->token_name.empty()) return "anonymous";
  return "token:" + grant->token_name;
}

std::map<std::string, size_t> HttpApi::ActiveAlertsByNode() const {
  std::map<std::string, size_t> by_node;
  if (alerts_ == nullptr) return by_node;
  for (const AlertInstance& a : alerts_->Instances(false)) {
    for (const Tag& t : a.tags) {
      if (t.key == "node") ++by_node[t.value];
    }
  }
  return by_node;
}

Response HttpApi::Nodes(const Request& request, std::string_view path) {
  const auto params = ParseQueryString(request.target());
  const bool put = request.method() == http::verb::put;
  query::NodeScope scope;
  // A status change reads the node's status as well as writing the new one.
  if (auto denied = FleetScope(request, params, Access::kRead, &scope)) return *denied;
  if (put) {
    if (auto denied = FleetScope(request, params, Access::kWrite, &scope)) return *denied;
  }
  const int64_t now = WallClockNanos();
  constexpr std::string_view kPrefix = "/api/v1/nodes";
  std::string_view rest = path.substr(kPrefix.size());
  if (rest.empty() || rest == "/") {
    std::vector<query::NodeRow> rows;
    const Status s = query::ListNodes(db_, scope, &rows);
    if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
    const std::map<std::string, size_t> alerts = ActiveAlertsByNode();
    json nodes = json::array();
    for (const query::NodeRow& row : rows) {
      const auto n = alerts.find(row.node);
      nodes.push_back(NodeJson(row, now, n == alerts.end() ? 0 : n->second));
    }
    return Json(http::status::ok, request.version(),
                {{"now", query::Rfc3339(now)}, {"nodes", std::move(nodes)}});
  }
  rest.remove_prefix(1);
  const size_t slash = rest.find('/');
  const std::string id =
      ParseQueryString("?id=" + std::string(rest.substr(0, slash)))["id"];  // percent-decoded
  const std::string_view what = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (what != "" && what != "/metrics" && what != "/status") {
    return Error(http::status::not_found, request.version(),
                 "no such endpoint: " + std::string(path) + " (see docs/http-api.md)");
  }
  if (put != (what == "/status")) {
    return Error(http::status::method_not_allowed, request.version(),
                 std::string(request.method_string()) + " is not allowed on " + std::string(path));
  }
  query::NodeRow row;
  const Status found = query::FindNode(db_, scope, id, &row);
  if (found.IsNotFound()) return Error(http::status::not_found, request.version(), found.message());
  if (!found.ok()) return Error(http::status::bad_request, request.version(), found.message());
  if (what == "/status") return SetStatus(request, params, row, now);
  if (what == "/metrics") return NodeMetrics(request, params, row, now);
  std::vector<query::GpuRow> gpus;
  const Status s = query::ListNodeGpus(db_, row, &gpus);
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  const std::map<std::string, size_t> alerts = ActiveAlertsByNode();
  const auto n = alerts.find(row.node);
  json body = NodeJson(row, now, n == alerts.end() ? 0 : n->second);
  body["gpus"] = json::array();
  for (const query::GpuRow& g : gpus) {
    body["gpus"].push_back({{"gpu", g.gpu},
                            {"sku", g.sku},
                            {"last_report", Time(g.last_report_ns)},
                            {"job", g.job},
                            {"latest", Values(g.latest)}});
  }
  body["alerts"] = json::array();
  if (alerts_ != nullptr) {
    for (const AlertInstance& a : alerts_->Instances(false)) {
      if (std::none_of(a.tags.begin(), a.tags.end(),
                       [&](const Tag& t) { return t.key == "node" && t.value == row.node; })) {
        continue;
      }
      body["alerts"].push_back({{"id", a.id},
                                {"rule", a.rule},
                                {"state", a.state},
                                {"severity", query::SeverityName(a.severity)},
                                {"owner", a.owner},
                                {"active_since", Time(a.active_since_ns)}});
    }
  }
  return Json(http::status::ok, request.version(), body);
}

Response HttpApi::NodeMetrics(const Request& request,
                              const std::map<std::string, std::string>& params,
                              const query::NodeRow& row, int64_t now_ns) {
  const auto param = [&](const char* key) { return Param(params, key); };
  int64_t range_ms[2] = {now_ns / kMsNs - 60 * kMinuteMs, now_ns / kMsNs};
  if (auto bad = ReadRange(params, range_ms)) {
    return Error(http::status::bad_request, request.version(), *bad);
  }
  if (range_ms[1] <= range_ms[0]) {
    return Error(http::status::bad_request, request.version(), "end must be after start");
  }
  // By default about 240 steps, whole minutes (the data's grain).
  int64_t step_ms = std::max<int64_t>(
      kMinuteMs, (range_ms[1] - range_ms[0] + 240 * kMinuteMs - 1) / (240 * kMinuteMs) * kMinuteMs);
  if (!param("step").empty() && (!ParsePromStep(param("step"), &step_ms) || step_ms <= 0)) {
    return Error(http::status::bad_request, request.version(),
                 "bad step '" + param("step") + "': a positive duration (60, 5m, 1h)");
  }
  const std::vector<std::string> fields =
      param("fields").empty() ? kDefaultNodeFields : SplitList(param("fields"));
  std::vector<query::GpuFieldSeries> series;
  const Status s = query::NodeGpuSeries(db_, row, fields, range_ms[0] * kMsNs, range_ms[1] * kMsNs,
                                        step_ms * kMsNs, kMaxSteps, &series);
  if (s.IsInvalidArgument())
    return Error(http::status::bad_request, request.version(), s.message());
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  json out = json::array();
  for (const query::GpuFieldSeries& one : series) {
    json points = json::array();
    for (const auto& [ns, v] : one.points) {
      points.push_back({static_cast<double>(ns / kMsNs) / 1000, v});
    }
    out.push_back({{"gpu", one.gpu}, {"field", one.field}, {"points", std::move(points)}});
  }
  return Json(http::status::ok, request.version(),
              {{"node", row.node},
               {"database", row.database},
               {"start", query::Rfc3339(range_ms[0] * kMsNs)},
               {"end", query::Rfc3339(range_ms[1] * kMsNs)},
               {"step_s", static_cast<double>(step_ms) / 1000},
               {"series", std::move(out)}});
}

Response HttpApi::SetStatus(const Request& request,
                            const std::map<std::string, std::string>& params,
                            const query::NodeRow& row, int64_t now_ns) {
  const json body = json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return Error(http::status::bad_request, request.version(),
                 "the body is a JSON object: {\"status\": \"maintenance\", \"reason\": \"...\"}");
  }
  const auto text = [&](const char* key) {
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::optional<query::NodeStatus> status = query::ParseNodeStatus(text("status"));
  if (!status) {
    return Error(http::status::bad_request, request.version(),
                 "status '" + text("status") + "' is not healthy, degraded or maintenance");
  }
  if (text("reason").empty()) {
    return Error(http::status::bad_request, request.version(),
                 "reason is required: why the node's status changes (it goes into the audit "
                 "trail)");
  }
  query::NodeAction action;
  action.action = "status";
  action.actor = ActorOf(request, params);
  if (!text("by").empty()) action.actor = text("by") + " via " + action.actor;
  action.reason = text("reason");
  bool changed = false;
  const Status s = query::SetNodeStatus(db_, query::NodeScope{row.database}, row.node, *status,
                                        now_ns, &action, &changed);
  if (!s.ok()) {
    return Error(s.IsResourceExhausted() ? http::status::service_unavailable
                                         : http::status::internal_server_error,
                 request.version(), "the status change was not recorded: " + s.ToString());
  }
  return Json(http::status::ok, request.version(), ActionJson(action));
}

Response HttpApi::Actions(const Request& request) {
  const auto params = ParseQueryString(request.target());
  query::NodeScope scope;
  if (auto denied = FleetScope(request, params, Access::kRead, &scope)) return *denied;
  int64_t range_ms[2] = {INT64_MIN / kMsNs, INT64_MAX / kMsNs};
  size_t limit = kDefaultActions;
  std::optional<std::string> bad = ReadRange(params, range_ms);
  if (!bad) bad = ReadLimit(params, kMaxActions, &limit);
  if (bad) return Error(http::status::bad_request, request.version(), *bad);
  std::vector<query::NodeAction> actions;
  const Status s = query::ListNodeActions(db_, scope, Param(params, "node"), range_ms[0] * kMsNs,
                                          range_ms[1] * kMsNs, limit, &actions);
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  json out = json::array();
  for (const query::NodeAction& a : actions) out.push_back(ActionJson(a));
  return Json(http::status::ok, request.version(), {{"actions", std::move(out)}});
}

Response HttpApi::LatestMetrics(const Request& request) {
  const auto params = ParseQueryString(request.target());
  query::NodeScope scope;
  if (auto denied = FleetScope(request, params, Access::kRead, &scope)) return *denied;
  const auto param = [&](const char* key) { return Param(params, key); };
  std::vector<TagMatcher> match;
  for (const char* key : {"node", "cluster", "region", "sku", "gpu"}) {
    if (!param(key).empty()) match.push_back({key, param(key)});
  }
  int64_t within_ms = 10 * kMinuteMs;
  if (!param("within").empty() && (!ParsePromStep(param("within"), &within_ms) || within_ms <= 0)) {
    return Error(http::status::bad_request, request.version(),
                 "bad within '" + param("within") + "': a positive duration (10m, 1h)");
  }
  size_t limit = kDefaultLatestGpus;
  if (auto bad = ReadLimit(params, kMaxLatestGpus, &limit)) {
    return Error(http::status::bad_request, request.version(), *bad);
  }
  const int64_t now = WallClockNanos();
  std::vector<query::LatestGpu> gpus;
  bool truncated = false;
  const Status s = query::LatestGpuValues(db_, scope, match, SplitList(param("fields")),
                                          now - within_ms * kMsNs, now, limit, &gpus, &truncated);
  if (s.IsInvalidArgument())
    return Error(http::status::bad_request, request.version(), s.message());
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  json out = json::array();
  for (const query::LatestGpu& g : gpus) {
    out.push_back({{"node", g.node},
                   {"gpu", g.gpu},
                   {"database", g.database},
                   {"region", g.region},
                   {"cluster", g.cluster},
                   {"sku", g.sku},
                   {"time", Time(g.last_report_ns)},
                   {"values", Values(g.latest)}});
  }
  return Json(http::status::ok, request.version(),
              {{"now", query::Rfc3339(now)}, {"truncated", truncated}, {"gpus", std::move(out)}});
}

}  // namespace gpulse::server
