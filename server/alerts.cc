// AlertManager (alerts.h).

#include "server/alerts.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "query/executor.h"
#include "query/fleet/calendar.h"
#include "query/query.h"
#include "query/runtime/format.h"

namespace gpulse::server {

namespace {

constexpr int64_t kMinuteNs = 60LL * 1'000'000'000;

// FNV-1a: a stable id for (rule, group) that survives restarts.
std::string InstanceId(std::string_view rule, std::string_view group) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(rule);
  mix(std::string_view("\0", 1));
  mix(group);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

nlohmann::json ValueJson(const QueryValue& v) {
  switch (v.index()) {
    case 1:
      return std::get<double>(v);
    case 2:
      return std::get<int64_t>(v);
    case 3:
      return std::get<uint64_t>(v);
    case 4:
      return std::get<bool>(v);
    case 5:
      return std::get<std::string>(v);
    default:
      return nullptr;
  }
}

// An instant for the JSON answers; "" for none.
std::string Rfc3339(int64_t ns) { return ns == 0 ? "" : query::Rfc3339(ns); }

nlohmann::json InstanceJson(const AlertInstance& a) {
  nlohmann::json tags = nlohmann::json::object();
  for (const Tag& t : a.tags) tags[t.key] = t.value;
  nlohmann::json columns = nlohmann::json::object();
  for (const auto& [k, v] : a.columns) columns[k] = ValueJson(v);
  nlohmann::json j = {{"id", a.id},
                      {"rule", a.rule},
                      {"group", tags},
                      {"severity", std::string(query::SeverityName(a.severity))},
                      {"owner", a.owner},
                      {"state", a.state},
                      {"active_since", Rfc3339(a.active_since_ns)},
                      {"last_evaluated", Rfc3339(a.last_evaluated_ns)},
                      {"values", columns}};
  j["fired_at"] = a.fired_ns ? nlohmann::json(Rfc3339(a.fired_ns)) : nlohmann::json(nullptr);
  j["resolved_at"] =
      a.resolved_ns ? nlohmann::json(Rfc3339(a.resolved_ns)) : nlohmann::json(nullptr);
  if (a.resolved_by_hand) j["resolved_by_hand"] = true;
  return j;
}

// An active instance as Prometheus' /api/v1/alerts and /api/v1/rules show
// one: the rule's name as alertname, the group and severity as labels.
nlohmann::json PromAlertJson(const AlertInstance& a) {
  nlohmann::json labels = {{"alertname", a.rule},
                           {"severity", std::string(query::SeverityName(a.severity))}};
  for (const Tag& t : a.tags) labels[t.key] = t.value;
  nlohmann::json annotations = nlohmann::json::object();
  if (!a.owner.empty()) annotations["owner"] = a.owner;
  double value = 0;
  if (const auto it = a.columns.find("value"); it != a.columns.end()) {
    if (const double* d = std::get_if<double>(&it->second)) value = *d;
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) value = static_cast<double>(*i);
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.10e", value);  // Prometheus' 'e', 10
  return {{"labels", labels},
          {"annotations", annotations},
          {"state", a.state},
          {"activeAt", Rfc3339(a.active_since_ns)},
          {"value", text}};
}

nlohmann::json PromAlerts(const std::vector<AlertInstance>& instances, std::string_view rule) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const AlertInstance& a : instances) {
    if (a.state == "resolved" || (!rule.empty() && a.rule != rule)) continue;
    alerts.push_back(PromAlertJson(a));
  }
  return alerts;
}

}  // namespace

std::string AlertCountersText(const AlertCounters& c) {
  std::string out;
  const auto line = [&out](const char* name, const char* help, uint64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(value) + "\n";
  };
  line("gpulse_alert_evaluations_total", "Alert rule evaluations.", c.evaluations);
  line("gpulse_alert_evaluation_errors_total", "Alert rule evaluations that failed.", c.errors);
  line("gpulse_alerts_fired_total", "Alerts that began to fire.", c.fired);
  line("gpulse_alerts_resolved_total", "Alerts resolved.", c.resolved);
  line("gpulse_alerts_suppressed_total",
       "Alert evaluations of a group held back by planned maintenance.", c.suppressed);
  line("gpulse_alert_minutes_skipped_total",
       "Minutes the alert loop fell too far behind to evaluate.", c.skipped_minutes);
  line("gpulse_alert_actions_total", "Nodes an alert rule's ACTION marked degraded.", c.actions);
  line("gpulse_alert_action_errors_total", "Alert rule actions that could not be taken.",
       c.action_errors);
  return out;
}

AlertManager::AlertManager(Db* db, AlertManagerOptions options, WebhookSender* webhooks)
    : db_(db), options_(options), webhooks_(webhooks) {}

AlertManager::~AlertManager() { Stop(); }

void AlertManager::Start() {
  std::lock_guard<std::mutex> l(loop_mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void AlertManager::Stop() {
  {
    std::lock_guard<std::mutex> l(loop_mu_);
    stop_ = true;
    stopping_ = true;
  }
  loop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// Wakes at each wall-clock minute and evaluates as of the minute `lag`
// before it. An evaluation that overran a minute is followed by the
// minutes it missed, so that FOR durations and times to detect stay true;
// after a stall of more than kMaxCatchUp minutes only the latest are
// evaluated, and the rest are counted as skipped.
void AlertManager::Loop() {
  constexpr int64_t kMaxCatchUp = 5;
  const int64_t lag_ns = options_.lag.count() * 1'000'000'000LL;
  int64_t last = 0;  // the last instant evaluated
  while (true) {
    const int64_t now = WallClockNanos();
    const int64_t next = (now / kMinuteNs + 1) * kMinuteNs;
    std::unique_lock<std::mutex> l(loop_mu_);
    const auto deadline = std::chrono::system_clock::time_point(std::chrono::nanoseconds(next));
    if (loop_cv_.wait_until(l, deadline, [this] { return stop_; })) return;
    l.unlock();
    const int64_t target = (next - lag_ns) / kMinuteNs * kMinuteNs;
    int64_t from = last == 0 ? target : last + kMinuteNs;
    if (target - from >= kMaxCatchUp * kMinuteNs) {
      const int64_t first = target - (kMaxCatchUp - 1) * kMinuteNs;
      std::lock_guard<std::mutex> g(mu_);
      counters_.skipped_minutes += static_cast<uint64_t>((first - from) / kMinuteNs);
      from = first;
    }
    for (int64_t t = from; t <= target && !stopping_; t += kMinuteNs) {
      EvaluateAt(t);
      last = t;
    }
  }
}

void AlertManager::ReloadRules(int64_t now_ns) {
  std::vector<std::pair<std::string, std::string>> stored;
  const Status s = db_->ListDefinitions(query::kAlertDefinitionKind, &stored);
  if (!s.ok()) return;  // keep the rules we have; the next minute tries again
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, Rule> next;
  std::set<std::string> kept;  // rules whose definition did not change
  for (auto& [name, text] : stored) {
    const auto old = rules_.find(name);
    if (old != rules_.end() && old->second.status.text == text) {
      kept.insert(name);
      next.emplace(name, std::move(old->second));
      continue;
    }
    Rule rule;
    Result<query::AlertRule> compiled = query::CompileAlertRule(text);
    rule.status.name = name;
    rule.status.text = text;
    if (compiled.ok()) {
      rule.compiled = std::move(*compiled);
      rule.status.severity = rule.compiled.severity;
      rule.status.owner = rule.compiled.owner;
    } else {
      rule.status.last_error = "stored rule does not compile: " + compiled.status().ToString();
    }
    next.emplace(name, std::move(rule));
  }
  if (options_.freshness_rule) {
    Rule rule;
    rule.compiled.name = std::string(kFreshnessRuleName);
    rule.compiled.text =
        "SHOW STALE: silent sources, silent clusters, nodes missing GPUs, "
        "allocated GPUs reporting no use";
    rule.compiled.severity = query::Severity::kTicket;
    rule.compiled.owner = "infra";
    rule.status.name = rule.compiled.name;
    rule.status.text = rule.compiled.text;
    rule.status.severity = rule.compiled.severity;
    rule.status.owner = rule.compiled.owner;
    const auto old = rules_.find(rule.compiled.name);
    if (old != rules_.end()) rule.status = old->second.status;
    kept.insert(rule.compiled.name);
    next[rule.compiled.name] = std::move(rule);
  }
  // The alerts of dropped or redefined rules go; a firing one is resolved
  // first, so that its webhook's receiver closes what it opened.
  for (auto it = active_.begin(); it != active_.end();) {
    AlertInstance& a = it->second;
    if (kept.contains(a.rule)) {
      ++it;
      continue;
    }
    const auto old = rules_.find(a.rule);
    if (a.state == "firing" && old != rules_.end()) {
      a.state = "resolved";
      a.resolved_ns = now_ns;
      ++counters_.resolved;
      Notify(old->second, a);
      Retire(std::move(a));
    }
    it = active_.erase(it);
  }
  rules_ = std::move(next);
}

void AlertManager::EvaluateAt(int64_t now_ns) {
  ReloadRules(now_ns);
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [name, rule] : rules_) names.push_back(name);
  }
  // Alerts of ACTION degrade rules that fired, acted on once the evaluation
  // is done (the Db is not written while mu_ is held).
  std::vector<std::pair<std::string, std::vector<AlertInstance>>> degrade;
  for (const std::string& name : names) {
    if (stopping_) break;
    query::AlertRule compiled;
    std::shared_ptr<query::RuleHistory> history;
    bool builtin = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      const auto it = rules_.find(name);
      if (it == rules_.end()) continue;
      builtin = name == kFreshnessRuleName;
      if (!builtin && it->second.compiled.statement == nullptr) continue;  // does not compile
      compiled = it->second.compiled;
      history = it->second.history;
    }
    const auto started = std::chrono::steady_clock::now();
    std::vector<query::AlertSample> samples;
    QueryOptions options;
    options.now_ns = now_ns;
    options.limits = options_.limits;
    options.cancelled = [this] { return stopping_.load(); };
    const Status s = builtin ? EvaluateFreshness(now_ns, &samples)
                             : query::EvaluateAlertRule(db_, &query::Execute, compiled, options,
                                                        now_ns, &samples, history.get());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    std::lock_guard<std::mutex> l(mu_);
    const auto it = rules_.find(name);
    if (it == rules_.end()) continue;
    Rule& rule = it->second;
    ++counters_.evaluations;
    rule.status.last_evaluated_ns = now_ns;
    rule.status.last_evaluation_ms = ms;
    if (!s.ok()) {
      ++counters_.errors;
      rule.status.last_error = s.ToString();
      continue;  // a failed evaluation changes no state
    }
    rule.status.last_error.clear();
    std::vector<AlertInstance> fired;
    Apply(rule, samples, now_ns, &fired);
    if (compiled.action == query::AlertAction::kDegrade)
      degrade.emplace_back(name, std::move(fired));
  }
  for (const auto& [rule, fired] : degrade) {
    for (const AlertInstance& a : fired) Degrade(rule, a, now_ns);
  }
}

void AlertManager::Degrade(const std::string& rule, const AlertInstance& alert, int64_t now_ns) {
  std::string node;
  for (const Tag& t : alert.tags) {
    if (t.key == "node") node = t.value;
  }
  query::NodeAction action;
  action.action = "degrade";
  action.actor = "rule:" + rule;
  action.reason = "alert " + alert.id + " {" + alert.group + "} fired";
  bool changed = false;
  const Status s = node.empty() ? Status::InvalidArgument("the alert's group names no node")
                                : query::SetNodeStatus(db_, {}, node, query::NodeStatus::kDegraded,
                                                       now_ns, &action, &changed);
  std::lock_guard<std::mutex> l(mu_);
  if (!s.ok()) {
    ++counters_.action_errors;
    const auto it = rules_.find(rule);
    if (it != rules_.end()) it->second.status.last_error = "ACTION degrade: " + s.ToString();
    return;
  }
  if (changed) ++counters_.actions;
}

// The collection contract as a rule: every SHOW STALE finding is an instance
// (grouped by its kind and source) that holds while the finding stands.
Status AlertManager::EvaluateFreshness(int64_t now_ns, std::vector<query::AlertSample>* out) {
  QueryOptions options;
  options.now_ns = now_ns;
  options.limits = options_.limits;
  options.cancelled = [this] { return stopping_.load(); };
  QueryResult result;
  GPULSE_RETURN_IF_ERROR(gpulse::Query(db_, "SHOW STALE", options, &result));
  const StatementResult& st = result.statements.at(0);
  GPULSE_RETURN_IF_ERROR(st.status);
  // A node drained for planned maintenance may well fall silent: its
  // findings are held back like any alert on it.
  query::Calendar calendar;
  GPULSE_RETURN_IF_ERROR(calendar.Load(db_, "", now_ns - 60'000'000'000LL, now_ns + 1));
  for (const ResultSeries& rs : st.series) {
    for (const auto& row : rs.values) {
      query::AlertSample sample;
      for (size_t c = 0; c < rs.columns.size() && c < row.size(); ++c) {
        const std::string& column = rs.columns[c];
        if ((column == "kind" || column == "source") && row[c].index() == 5) {
          sample.group.push_back({column, std::get<std::string>(row[c])});
        } else {
          sample.columns[column] = row[c];
        }
      }
      sample.columns["value"] = sample.columns["last_seen"];
      sample.active = true;
      for (const Tag& t : sample.group) {
        // A node's findings name the node; a GPU's, "node/index".
        if (t.key == "source") {
          sample.in_maintenance = calendar.NodeInMaintenance(t.value.substr(0, t.value.find('/')),
                                                             now_ns - 60'000'000'000LL, now_ns);
        }
      }
      out->push_back(std::move(sample));
    }
  }
  return Status::Ok();
}

void AlertManager::Apply(Rule& rule, const std::vector<query::AlertSample>& samples, int64_t now_ns,
                         std::vector<AlertInstance>* fired) {
  const query::AlertRule& r = rule.compiled;
  std::map<std::string, const query::AlertSample*> holding;
  for (const query::AlertSample& s : samples) {
    if (!s.active) continue;
    if (s.in_maintenance || !s.season.empty()) {
      ++counters_.suppressed;
      continue;
    }
    holding[InstanceId(r.name, query::GroupText(s.group))] = &s;
  }
  // Instances whose WHEN no longer holds.
  for (auto it = active_.begin(); it != active_.end();) {
    AlertInstance& a = it->second;
    if (a.rule != r.name || holding.contains(a.id)) {
      ++it;
      continue;
    }
    if (a.state == "firing") {
      a.state = "resolved";
      a.resolved_ns = now_ns;
      a.last_evaluated_ns = now_ns;
      ++counters_.resolved;
      Notify(rule, a);
      Retire(std::move(a));
    }
    // A pending instance never fired: it leaves no trace. One resolved by
    // hand is re-armed.
    it = active_.erase(it);
  }
  for (const auto& [id, sample] : holding) {
    auto [it, inserted] = active_.try_emplace(id);
    AlertInstance& a = it->second;
    if (inserted) {
      a.id = id;
      a.rule = r.name;
      a.tags = sample->group;
      a.group = query::GroupText(sample->group);
      a.severity = r.severity;
      a.owner = r.owner;
      a.state = "pending";
      a.active_since_ns = now_ns;
    }
    a.last_evaluated_ns = now_ns;
    a.columns = sample->columns;
    if (a.state == "pending" && now_ns - a.active_since_ns >= r.for_ns) {
      a.state = "firing";
      a.fired_ns = now_ns;
      rule.status.last_fired_ns = now_ns;
      ++counters_.fired;
      Notify(rule, a);
      fired->push_back(a);
    }
  }
}

void AlertManager::Notify(const Rule& rule, const AlertInstance& instance) {
  if (webhooks_ == nullptr || rule.compiled.webhook.empty()) return;
  nlohmann::json j = InstanceJson(instance);
  j["summary"] = "alert " + instance.rule +
                 (instance.group.empty() ? "" : " {" + instance.group + "}") + " is " +
                 instance.state;
  if (rule.compiled.action == query::AlertAction::kDegrade && instance.state == "firing") {
    // What the receiver is asked to do: the node is marked degraded too.
    std::string node;
    for (const Tag& t : instance.tags) {
      if (t.key == "node") node = t.value;
    }
    j["action"] = {{"kind", "degrade"},
                   {"node", node},
                   {"intent", "drain the node and migrate its workloads"}};
  }
  webhooks_->Send(rule.compiled.webhook, j.dump());
}

void AlertManager::Retire(AlertInstance instance) {
  resolved_.push_front(std::move(instance));
  while (resolved_.size() > options_.resolved_kept) resolved_.pop_back();
}

std::vector<AlertInstance> AlertManager::Instances(bool include_resolved) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<AlertInstance> out;
  for (const auto& [id, a] : active_) {
    if (a.state != "resolved") out.push_back(a);
  }
  std::sort(out.begin(), out.end(), [](const AlertInstance& a, const AlertInstance& b) {
    return a.active_since_ns != b.active_since_ns ? a.active_since_ns > b.active_since_ns
                                                  : a.id < b.id;
  });
  if (include_resolved) out.insert(out.end(), resolved_.begin(), resolved_.end());
  return out;
}

std::vector<AlertRuleStatus> AlertManager::Rules() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<AlertRuleStatus> out;
  for (const auto& [name, rule] : rules_) {
    AlertRuleStatus s = rule.status;
    s.for_ns = rule.compiled.for_ns;
    s.action = rule.compiled.action;
    for (const auto& [id, a] : active_) {
      if (a.rule != name) continue;
      s.pending += a.state == "pending" ? 1 : 0;
      s.firing += a.state == "firing" ? 1 : 0;
    }
    out.push_back(std::move(s));
  }
  return out;
}

AlertCounters AlertManager::Counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

Status AlertManager::Resolve(std::string_view id, int64_t now_ns, size_t* resolved) {
  std::lock_guard<std::mutex> l(mu_);
  *resolved = 0;
  for (auto& [key, a] : active_) {
    if ((a.id != id && a.rule != id) || a.state == "resolved") continue;
    const bool was_firing = a.state == "firing";
    a.state = "resolved";
    a.resolved_ns = now_ns;
    a.resolved_by_hand = true;
    ++*resolved;
    ++counters_.resolved;
    const auto rule = rules_.find(a.rule);
    if (was_firing && rule != rules_.end()) Notify(rule->second, a);
    Retire(a);
    // The copy left in active_ (state resolved) keeps it quiet until WHEN
    // fails once.
  }
  if (*resolved == 0) {
    return Status::NotFound("no pending or firing alert has the id or rule name '" +
                            std::string(id) + "'");
  }
  return Status::Ok();
}

void AlertManager::ShowAlerts(ResultSeries* out) const {
  const std::vector<AlertRuleStatus> rules = Rules();
  const std::vector<AlertInstance> instances = Instances(false);
  out->name = "alerts";
  out->columns = {"name",  "severity", "owner", "state",          "group",
                  "since", "value",    "id",    "last_evaluated", "error"};
  for (const AlertRuleStatus& r : rules) {
    bool any = false;
    for (const AlertInstance& a : instances) {
      if (a.rule != r.name) continue;
      any = true;
      const auto v = a.columns.find("value");
      out->values.push_back({r.name, std::string(query::SeverityName(r.severity)), r.owner, a.state,
                             a.group, QueryValue(a.active_since_ns),
                             v == a.columns.end() ? QueryValue() : v->second, a.id,
                             QueryValue(r.last_evaluated_ns),
                             r.last_error.empty() ? QueryValue() : QueryValue(r.last_error)});
    }
    if (!any) {
      out->values.push_back({r.name, std::string(query::SeverityName(r.severity)), r.owner,
                             std::string(r.last_evaluated_ns ? "inactive" : "not evaluated yet"),
                             QueryValue(), QueryValue(), QueryValue(), QueryValue(),
                             r.last_evaluated_ns ? QueryValue(r.last_evaluated_ns) : QueryValue(),
                             r.last_error.empty() ? QueryValue() : QueryValue(r.last_error)});
    }
  }
}

std::string AlertsToJson(const std::vector<AlertInstance>& instances,
                         const std::vector<AlertRuleStatus>& rules) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const AlertInstance& a : instances) alerts.push_back(InstanceJson(a));
  nlohmann::json list = nlohmann::json::array();
  for (const AlertRuleStatus& r : rules) {
    list.push_back(
        {{"name", r.name},
         {"definition", r.text},
         {"severity", std::string(query::SeverityName(r.severity))},
         {"owner", r.owner},
         {"pending", r.pending},
         {"firing", r.firing},
         {"last_evaluated", Rfc3339(r.last_evaluated_ns)},
         {"last_evaluation_ms", r.last_evaluation_ms},
         {"last_fired", r.last_fired_ns == 0 ? nlohmann::json(nullptr)
                                             : nlohmann::json(Rfc3339(r.last_fired_ns))},
         {"action", r.action == query::AlertAction::kDegrade ? nlohmann::json("degrade")
                                                             : nlohmann::json(nullptr)},
         {"error", r.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.last_error)}});
  }
  // Prometheus' envelope beside gpulse's own keys, for its clients.
  return nlohmann::json{{"alerts", alerts},
                        {"rules", list},
                        {"status", "success"},
                        {"data", {{"alerts", PromAlerts(instances, "")}}}}
      .dump();
}

std::string PromRulesToJson(const std::vector<AlertInstance>& instances,
                            const std::vector<AlertRuleStatus>& rules) {
  nlohmann::json list = nlohmann::json::array();
  double evaluation_s = 0;
  int64_t last_ns = 0;
  for (const AlertRuleStatus& r : rules) {
    const char* state = r.firing > 0 ? "firing" : r.pending > 0 ? "pending" : "inactive";
    nlohmann::json annotations = nlohmann::json::object();
    if (!r.owner.empty()) annotations["owner"] = r.owner;
    list.push_back({{"state", state},
                    {"name", r.name},
                    {"query", r.text},
                    {"duration", static_cast<double>(r.for_ns) / 1e9},
                    {"labels", {{"severity", std::string(query::SeverityName(r.severity))}}},
                    {"annotations", annotations},
                    {"alerts", PromAlerts(instances, r.name)},
                    {"health", r.last_evaluated_ns == 0 ? "unknown"
                               : r.last_error.empty()   ? "ok"
                                                        : "err"},
                    {"lastError", r.last_error},
                    {"evaluationTime", r.last_evaluation_ms / 1000},
                    {"lastEvaluation", Rfc3339(r.last_evaluated_ns)},
                    {"type", "alerting"}});
    evaluation_s += r.last_evaluation_ms / 1000;
    last_ns = std::max(last_ns, r.last_evaluated_ns);
  }
  nlohmann::json groups = nlohmann::json::array();
  if (!list.empty()) {
    groups.push_back({{"name", "gpulse"},
                      {"file", "gpulse"},
                      {"interval", 60},
                      {"limit", 0},
                      {"rules", list},
                      {"evaluationTime", evaluation_s},
                      {"lastEvaluation", Rfc3339(last_ns)}});
  }
  return nlohmann::json{{"status", "success"}, {"data", {{"groups", groups}}}}.dump();
}

}  // namespace gpulse::server
