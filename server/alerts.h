// AlertManager: the server side of alert rules (query/fleet/alert_rule.h). Every
// minute it evaluates each stored rule, and the built-in freshness rule (the
// collection contract of SHOW STALE), and moves each (rule, group) instance
// through its states:
//
//   (none) --WHEN holds--> pending --held for FOR--> firing --WHEN fails--> resolved
//      ^                      |                        |
//      +----WHEN fails--------+      POST .../resolve: resolved by hand, and
//                                    silent until WHEN has failed once
//
// A group whose node is inside planned maintenance does not alert, nor does
// a rule that compares with a baseline inside a known season (CREATE
// SEASON): it counts as WHEN failing, and the suppression is counted. Firing and resolving send
// the rule's webhook (WebhookSender: queued, retried, never blocking).
// Instances live in memory: after a restart, pending and firing alerts are
// found again by the next evaluations (a rule with FOR waits it out again).
//
// Thread safety: EvaluateAt runs on one thread at a time (the manager's
// own, or a test's); the readers (Instances, Rules, Resolve...) may run on
// any thread meanwhile.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "query/fleet/alert_rule.h"
#include "query/fleet/nodes.h"
#include "query/query.h"
#include "server/webhook.h"

namespace gpulse::server {

struct AlertManagerOptions {
  // Rules are evaluated as of the last whole minute, this far in the past,
  // so that agents pushing once a minute have delivered it.
  std::chrono::seconds lag{60};
  // The built-in rule on SHOW STALE's findings.
  bool freshness_rule = true;
  // How many resolved instances GET /api/v1/alerts keeps showing.
  size_t resolved_kept = 1000;
  // Bounds on each rule's evaluation (the server's query limits).
  QueryLimits limits;
};

using query::kFreshnessRuleName;

struct AlertInstance {
  std::string id;  // 16 hex digits, stable for (rule, group)
  std::string rule;
  std::string group;  // "node=n1,region=r", "" fleet-wide
  std::vector<Tag> tags;
  query::Severity severity = query::Severity::kTicket;
  std::string owner;
  std::string state;            // "pending", "firing", "resolved"
  int64_t active_since_ns = 0;  // when WHEN began to hold
  int64_t fired_ns = 0;         // when it became firing; 0 if never
  int64_t resolved_ns = 0;      // when it was resolved; 0 if not
  bool resolved_by_hand = false;
  int64_t last_evaluated_ns = 0;
  std::map<std::string, QueryValue> columns;  // the sample that last held (value, baseline...)
};

struct AlertRuleStatus {
  std::string name;
  std::string text;  // the CREATE ALERT statement; a description for the built-in rule
  query::Severity severity = query::Severity::kTicket;
  std::string owner;
  int64_t last_evaluated_ns = 0;
  double last_evaluation_ms = 0;
  std::string last_error;  // empty when the last evaluation succeeded
  size_t pending = 0, firing = 0;
  int64_t for_ns = 0;         // FOR: how long WHEN holds before it fires
  int64_t last_fired_ns = 0;  // when an instance last became firing; 0: not since the start
  query::AlertAction action = query::AlertAction::kNone;
};

struct AlertCounters {
  uint64_t evaluations = 0;      // rule evaluations
  uint64_t errors = 0;           // rule evaluations that failed
  uint64_t fired = 0;            // transitions to firing
  uint64_t resolved = 0;         // transitions to resolved
  uint64_t suppressed = 0;       // (rule, group) evaluations held back by maintenance
  uint64_t skipped_minutes = 0;  // minutes the loop fell too far behind to evaluate
  uint64_t actions = 0;          // nodes an ACTION marked degraded
  uint64_t action_errors = 0;    // actions that could not be taken (named in the rule's last_error)
};

// The counters in Prometheus text format, for GET /metrics.
std::string AlertCountersText(const AlertCounters& c);

class AlertManager {
 public:
  // `db` must outlive the manager; `webhooks` may be null (no notifications).
  AlertManager(Db* db, AlertManagerOptions options, WebhookSender* webhooks);
  ~AlertManager();
  AlertManager(const AlertManager&) = delete;
  AlertManager& operator=(const AlertManager&) = delete;

  // Starts the thread that calls EvaluateAt each minute of the wall clock.
  void Start();
  void Stop();

  // Reloads the stored rules and evaluates every rule as of `now_ns`.
  void EvaluateAt(int64_t now_ns);

  // The current instances: pending and firing ones, and with
  // `include_resolved` the most recently resolved ones too. Newest first.
  std::vector<AlertInstance> Instances(bool include_resolved) const;
  std::vector<AlertRuleStatus> Rules() const;
  AlertCounters Counters() const;

  // Resolves by hand the instance with this id, or every active instance of
  // the rule with this name. NotFound naming `id` when it matches nothing
  // active.
  Status Resolve(std::string_view id, int64_t now_ns, size_t* resolved);

  // SHOW ALERTS: a row per active instance, and one per rule with none.
  void ShowAlerts(ResultSeries* out) const;

 private:
  struct Rule {
    query::AlertRule compiled;
    AlertRuleStatus status;
    // Its source's past answers, for its baseline (kept while the rule's
    // text is unchanged). Used by the evaluating thread only.
    std::shared_ptr<query::RuleHistory> history = std::make_shared<query::RuleHistory>();
  };

  void Loop();
  // Picks up created, dropped and redefined rules; the firing alerts of a
  // rule that went are resolved as of `now_ns`.
  void ReloadRules(int64_t now_ns);
  Status EvaluateFreshness(int64_t now_ns, std::vector<query::AlertSample>* out);
  // Moves the rule's instances on; those that became firing are appended to
  // *fired.
  void Apply(Rule& rule, const std::vector<query::AlertSample>& samples, int64_t now_ns,
             std::vector<AlertInstance>* fired);
  // ACTION degrade: marks the node of `alert` (of rule `rule`) degraded
  // (query/fleet/nodes.h). REQUIRES: mu_ not held.
  void Degrade(const std::string& rule, const AlertInstance& alert, int64_t now_ns);
  void Notify(const Rule& rule, const AlertInstance& instance);
  void Retire(AlertInstance instance);

  Db* const db_;
  const AlertManagerOptions options_;
  WebhookSender* const webhooks_;

  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, Rule> rules_;
  std::map<std::string, AlertInstance> active_;  // by id: pending, firing, or resolved by hand
  std::deque<AlertInstance> resolved_;
  AlertCounters counters_;

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool stop_ = false;
  // Set by Stop before it waits: a running evaluation's queries are
  // cancelled rather than finished.
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// The instances as JSON for GET /api/v1/alerts and /api/v1/alerts/active,
// with Prometheus' {"status", "data": {"alerts"}} beside gpulse's keys.
std::string AlertsToJson(const std::vector<AlertInstance>& instances,
                         const std::vector<AlertRuleStatus>& rules);
// /api/v1/rules: the rules as Prometheus' alerting rules, one group
// "gpulse", each with its pending and firing alerts.
std::string PromRulesToJson(const std::vector<AlertInstance>& instances,
                            const std::vector<AlertRuleStatus>& rules);

}  // namespace gpulse::server
